package kwire.conformance;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.AbstractLegacyRecordBatch;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.DefaultRecord;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.LegacyRecord;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * Record data as Kafka's own record reader (MemoryRecords.batches() and the
 * batch iterators, decompression included) sees it, in the JSON shape of
 * kwire's decoded records: Kafka's JSON converters write a `records` field as
 * an empty string (KIP-673), so this is what kwire's batches are compared with.
 *
 * Field names are kwire's (baseOffset ... recordCount, records[length,
 * attributes, timestampDelta, offsetDelta, key, value, headers[key, value]];
 * legacy messages offset, messageSize, crc, magic, attributes, timestamp,
 * key, value, innerMessages). Values come from Kafka's accessors; the few that
 * Kafka does not expose as such are derived from what it does expose, each
 * noted below.
 */
final class RecordsView {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    static ArrayNode describe(MemoryRecords records) {
        ArrayNode out = F.arrayNode();
        for (MutableRecordBatch b : records.batches()) {
            if (b.magic() >= RecordBatch.MAGIC_VALUE_V2) out.add(batch((DefaultRecordBatch) b));
            else out.add(legacy((AbstractLegacyRecordBatch) b, b.lastOffset()));
        }
        return out;
    }

    private static ObjectNode batch(DefaultRecordBatch b) {
        ObjectNode o = F.objectNode();
        o.put("baseOffset", b.baseOffset());
        o.put("batchLength", b.sizeInBytes() - 12);  // the field counts the bytes after itself
        o.put("partitionLeaderEpoch", b.partitionLeaderEpoch());
        o.put("magic", b.magic());
        o.put("crc", b.checksum());
        // Not exposed as a whole; rebuilt from the accessors (codec, timestamp type,
        // transactional, control, delete horizon: bits 0-2, 3, 4, 5, 6).
        int attributes = b.compressionType().id
            | (b.timestampType() == TimestampType.LOG_APPEND_TIME ? 8 : 0)
            | (b.isTransactional() ? 16 : 0)
            | (b.isControlBatch() ? 32 : 0)
            | (b.deleteHorizonMs().isPresent() ? 64 : 0);
        o.put("attributes", attributes);
        o.put("lastOffsetDelta", (int) (b.lastOffset() - b.baseOffset()));
        o.put("baseTimestamp", b.baseTimestamp());
        o.put("maxTimestamp", b.maxTimestamp());
        o.put("producerId", b.producerId());
        o.put("producerEpoch", b.producerEpoch());
        o.put("baseSequence", b.baseSequence());
        o.put("recordCount", b.countOrNull());
        ArrayNode recs = o.putArray("records");
        for (Record r : b) {
            DefaultRecord d = (DefaultRecord) r;
            ObjectNode x = recs.addObject();
            x.put("length", bodySize(d.sizeInBytes()));
            x.put("attributes", d.attributes());
            x.put("timestampDelta", d.timestamp() - b.baseTimestamp());
            x.put("offsetDelta", (int) (d.offset() - b.baseOffset()));
            putBytes(x, "key", d.key());
            putBytes(x, "value", d.value());
            ArrayNode hs = x.putArray("headers");
            for (Header h : d.headers()) {
                ObjectNode hx = hs.addObject();
                hx.put("key", h.key());
                if (h.value() == null) hx.putNull("value");
                else hx.put("value", Base64.getEncoder().encodeToString(h.value()));
            }
        }
        return o;
    }

    // DefaultRecord.sizeInBytes() includes the varint length prefix; the
    // `length` field is the size of what follows it.
    private static int bodySize(int total) {
        for (int k = 1; k <= 5; ++k) {
            int body = total - k;
            if (varintSize(body) == k) return body;
        }
        throw new IllegalStateException("record size " + total);
    }

    private static int varintSize(int v) {
        int zz = (v << 1) ^ (v >> 31);
        int n = 1;
        while ((zz & ~0x7f) != 0) {
            zz >>>= 7;
            ++n;
        }
        return n;
    }

    /**
     * A legacy entry. `offset` is the offset field as written: for the inner
     * messages of a magic 1 wrapper Kafka's iterator gives absolute offsets,
     * while the wire holds offsets relative to the first (MemoryRecordsBuilder
     * writes 0, 1, ...), so those are converted back.
     */
    private static ObjectNode legacy(AbstractLegacyRecordBatch b, long offset) {
        LegacyRecord r = b.outerRecord();
        ObjectNode o = F.objectNode();
        o.put("offset", offset);
        o.put("messageSize", r.sizeInBytes());
        o.put("crc", r.checksum());
        o.put("magic", r.magic());
        o.put("attributes", r.attributes());
        if (r.magic() >= RecordBatch.MAGIC_VALUE_V1) o.put("timestamp", r.timestamp());
        putBytes(o, "key", r.key());
        putBytes(o, "value", r.value());
        if (r.compressionType() != CompressionType.NONE) {
            List<AbstractLegacyRecordBatch> inner = new ArrayList<>();
            for (Record x : b) inner.add((AbstractLegacyRecordBatch) x);
            long first = inner.isEmpty() ? 0 : inner.get(0).lastOffset();
            ArrayNode a = o.putArray("innerMessages");
            for (AbstractLegacyRecordBatch x : inner) {
                long raw = r.magic() >= RecordBatch.MAGIC_VALUE_V1 ? x.lastOffset() - first : x.lastOffset();
                a.add(legacy(x, raw));
            }
        }
        return o;
    }

    private static void putBytes(ObjectNode o, String name, ByteBuffer b) {
        if (b == null) {
            o.putNull(name);
            return;
        }
        byte[] a = new byte[b.remaining()];
        b.duplicate().get(a);
        o.put(name, Base64.getEncoder().encodeToString(a));
    }
}
