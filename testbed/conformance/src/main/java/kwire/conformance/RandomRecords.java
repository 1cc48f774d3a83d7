package kwire.conformance;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * Record data for `records` fields, written by Kafka's MemoryRecordsBuilder:
 * RecordBatch v2 with every codec (plain, idempotent, transactional and
 * control batches), and legacy message sets (magic 0 and 1, plain and
 * compressed wrappers), several batches back to back.
 *
 * The message versions from before RecordBatch v2 (Produce v0-2, Fetch v0-3,
 * only in kafka-clients 3.x) get only the message set format their clients
 * and brokers used: magic 0 up to Produce/Fetch v1, magic 1 from v2.
 */
final class RandomRecords {
    static final class Built {
        final byte[] bytes;
        final MemoryRecords records;

        Built(byte[] bytes) {
            this.bytes = bytes;
            this.records = MemoryRecords.readableRecords(ByteBuffer.wrap(bytes.clone()));
        }
    }

    static Built empty() {
        return new Built(new byte[0]);
    }

    /** No fixed magic: any batch format. */
    static final int ANY_MAGIC = -1;

    /**
     * The one magic the records of `specName` at `version` are written in
     * ("ProduceRequest" v0-1: 0, v2: 1; "FetchResponse" v0-1: 0, v2-3: 1),
     * else ANY_MAGIC.
     */
    static int magicOf(String specName, int version) {
        switch (specName) {
            case "ProduceRequest":
                return version <= 1 ? RecordBatch.MAGIC_VALUE_V0 : version == 2 ? RecordBatch.MAGIC_VALUE_V1 : ANY_MAGIC;
            case "FetchResponse":
                return version <= 1 ? RecordBatch.MAGIC_VALUE_V0 : version <= 3 ? RecordBatch.MAGIC_VALUE_V1 : ANY_MAGIC;
            default:
                return ANY_MAGIC;
        }
    }

    /** `batches` batches, each of a random format, or all of magic `magic` unless it is ANY_MAGIC. */
    static Built make(SplittableRandom rnd, int batches, int magic) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        long offset = rnd.nextInt(3) == 0 ? 0 : rnd.nextLong(0, 1L << 40);
        for (int i = 0; i < batches; ++i) {
            MemoryRecords m = batch(rnd, offset, magic);
            ByteBuffer b = m.buffer();
            byte[] a = new byte[b.remaining()];
            b.get(a);
            out.write(a, 0, a.length);
            offset += 10;
        }
        return new Built(out.toByteArray());
    }

    private static Compression codec(SplittableRandom rnd, byte magic) {
        switch (rnd.nextInt(magic >= 2 ? 5 : 4)) {
            case 0: return Compression.NONE;
            case 1: return Compression.gzip().build();
            case 2: return Compression.snappy().build();
            case 3: return Compression.lz4().build();
            default: return Compression.zstd().build();
        }
    }

    private static MemoryRecords batch(SplittableRandom rnd, long baseOffset, int fixedMagic) {
        int kind = rnd.nextInt(20);  // drawn either way, so the rest of the stream stays put
        byte magic = fixedMagic != ANY_MAGIC ? (byte) fixedMagic
            : kind == 0 ? RecordBatch.MAGIC_VALUE_V0 : kind <= 2 ? RecordBatch.MAGIC_VALUE_V1 : RecordBatch.MAGIC_VALUE_V2;
        long now = 1_700_000_000_000L + rnd.nextLong(0, 100_000_000L);
        int leaderEpoch = magic >= 2 ? rnd.nextInt(-1, 1000) : RecordBatch.NO_PARTITION_LEADER_EPOCH;
        boolean producer = magic >= 2 && rnd.nextBoolean();
        long producerId = producer ? rnd.nextLong(0, 1L << 48) : RecordBatch.NO_PRODUCER_ID;
        short producerEpoch = producer ? (short) rnd.nextInt(0, Short.MAX_VALUE) : RecordBatch.NO_PRODUCER_EPOCH;
        int sequence = producer ? rnd.nextInt(0, 1 << 20) : RecordBatch.NO_SEQUENCE;
        boolean transactional = producer && rnd.nextInt(3) == 0;
        if (transactional && rnd.nextInt(4) == 0) {
            ControlRecordType type = rnd.nextBoolean() ? ControlRecordType.COMMIT : ControlRecordType.ABORT;
            return MemoryRecords.withEndTransactionMarker(baseOffset, now, leaderEpoch, producerId, producerEpoch,
                new EndTransactionMarker(type, rnd.nextInt(0, 100)));
        }
        MemoryRecordsBuilder b = MemoryRecords.builder(ByteBuffer.allocate(256), magic, codec(rnd, magic),
            TimestampType.CREATE_TIME, baseOffset, RecordBatch.NO_TIMESTAMP, producerId, producerEpoch, sequence,
            transactional, leaderEpoch);
        int n = 1 + rnd.nextInt(5);
        for (int i = 0; i < n; ++i) {
            long ts = magic == RecordBatch.MAGIC_VALUE_V0 ? RecordBatch.NO_TIMESTAMP : now + rnd.nextInt(-5000, 5000);
            byte[] key = rnd.nextInt(4) == 0 ? null : text(rnd);
            byte[] value = rnd.nextInt(8) == 0 ? null : text(rnd);
            Header[] headers = new Header[magic >= 2 ? rnd.nextInt(3) : 0];
            for (int h = 0; h < headers.length; ++h)
                headers[h] = new RecordHeader(RandomMessage.Text.random(rnd, rnd.nextInt(8)), rnd.nextInt(5) == 0 ? null : text(rnd));
            b.appendWithOffset(baseOffset + i, ts, key, value, headers);
        }
        return b.build();
    }

    private static byte[] text(SplittableRandom rnd) {
        return RandomMessage.Text.random(rnd, rnd.nextInt(rnd.nextInt(10) == 0 ? 300 : 20)).getBytes(StandardCharsets.UTF_8);
    }
}
