package kwire.conformance;

import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;

import java.io.BufferedReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Base64;
import java.util.HashSet;
import java.util.Set;

/**
 * The other direction of conformance: messages encoded by kwire are read by
 * Kafka's generated classes (header, then body) and serialized again; the
 * bytes must be identical.
 *
 * Input: one message per line, "API_KEY VERSION request|response BASE64",
 * the base64 being the header and body (no size prefix).
 * Output: one line per mismatch, then
 *   "kafka-reserialize: M messages, V api-versions, X mismatches"
 * Exit status 1 when X > 0.
 *
 * Usage: Reserialize FILE
 */
public final class Reserialize {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: Reserialize FILE");
            System.exit(2);
        }
        long messages = 0;
        long mismatches = 0;
        Set<String> triples = new HashSet<>();
        try (BufferedReader in = Files.newBufferedReader(Paths.get(args[0]), StandardCharsets.UTF_8)) {
            String line;
            long number = 0;
            while ((line = in.readLine()) != null) {
                ++number;
                if (line.isBlank()) continue;
                String[] p = line.trim().split(" ");
                ++messages;
                String problem;
                try {
                    if (p.length != 4) throw new IllegalArgumentException("expected 4 fields, got " + p.length);
                    triples.add(p[0] + " " + p[1] + " " + p[2]);
                    problem = check(ApiKeys.forId(Short.parseShort(p[0])), Short.parseShort(p[1]), p[2].equals("request"),
                        Base64.getDecoder().decode(p[3]));
                } catch (Exception e) {
                    problem = "Kafka cannot read it: " + e;
                }
                if (problem != null) {
                    ++mismatches;
                    if (mismatches <= 50) System.out.printf("MISMATCH line %d (%s): %s%n", number,
                        p.length >= 3 ? p[0] + " v" + p[1] + " " + p[2] : "?", problem);
                }
            }
        }
        System.out.printf("kafka-reserialize: %d messages, %d api-versions, %d mismatches%n", messages, triples.size(), mismatches);
        System.exit(mismatches == 0 ? 0 : 1);
    }

    /** Null when Kafka reads `bytes` and writes them back identically, else what differs. */
    static String check(ApiKeys api, short version, boolean request, byte[] bytes) {
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        ByteBufferAccessor in = new ByteBufferAccessor(buf);
        Message header;
        short hv;
        if (request) {
            hv = api.requestHeaderVersion(version);
            header = new RequestHeaderData(in, hv);
        } else {
            hv = api.responseHeaderVersion(version);
            header = new ResponseHeaderData(in, hv);
        }
        Message body = request ? api.messageType.newRequest() : api.messageType.newResponse();
        body.read(in, version);
        if (buf.hasRemaining()) return buf.remaining() + " bytes left after Kafka read the message";
        byte[] h = Kafka.serialize(header, hv);
        byte[] b = Kafka.serialize(body, version);
        byte[] again = new byte[h.length + b.length];
        System.arraycopy(h, 0, again, 0, h.length);
        System.arraycopy(b, 0, again, h.length, b.length);
        return firstDifference(bytes, again);
    }

    static String firstDifference(byte[] kwire, byte[] kafka) {
        int n = Math.min(kwire.length, kafka.length);
        int i = 0;
        while (i < n && kwire[i] == kafka[i]) ++i;
        if (i == n && kwire.length == kafka.length) return null;
        return String.format("first difference at byte %d of %d/%d (kwire %s, kafka %s); kwire ...%s, kafka ...%s",
            i, kwire.length, kafka.length, at(kwire, i), at(kafka, i), hex(kwire, i), hex(kafka, i));
    }

    private static String at(byte[] b, int i) {
        return i < b.length ? String.format("0x%02x", b[i] & 0xff) : "end";
    }

    private static String hex(byte[] b, int from) {
        StringBuilder sb = new StringBuilder();
        for (int i = Math.max(0, from - 8); i < Math.min(b.length, from + 16); ++i) {
            if (i == from) sb.append('[');
            sb.append(String.format("%02x", b[i] & 0xff));
            if (i == from) sb.append(']');
        }
        return sb.toString();
    }
}
