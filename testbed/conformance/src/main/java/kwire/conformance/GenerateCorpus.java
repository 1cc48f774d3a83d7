package kwire.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.utils.internals.AppInfoParser;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;

/**
 * Writes the conformance corpus: for every (api key, version, direction) of
 * the kafka-clients jar, N seeded random messages made and serialized by
 * Kafka's generated classes, one JSON line each:
 *
 *   {"seed": S, "base64": body bytes as Kafka wrote them (no size prefix, no header),
 *    "json": Kafka's JsonConverter rendering,
 *    "records": [{"path": JSON pointer of a records field, "batches": Kafka's reading}],  (when any)
 *    "nested": [{"path": JSON pointer of a bytes field, "json": Kafka's JSON of its payload}],  (see Nested)
 *    "hint": what a response's payloads need from its request}  (see Nested)
 *
 * into DIR/NNN-Api-vV-request.jsonl and ...-response.jsonl; the request and
 * response headers go to DIR/request-header-vV.jsonl and
 * DIR/response-header-vV.jsonl, each line also naming the api key and version
 * its header is for ("apiKey", "apiVersion"). DIR/manifest.json says what the
 * jar offers (the count the C++ test must cover).
 *
 * With --only FILE, only the api versions FILE lists are written, one
 * "API_KEY VERSION" a line (both directions of each; blank lines and '#'
 * comments ignored), and the headers only of those; the manifest's counts are
 * then of those, and its "only" lists them. Each listed version must be one
 * the jar offers. A message's seed depends only on its api key, version,
 * direction and index, so a restricted corpus holds the same messages as the
 * full one for the same jar and seed (the headers excepted: which api version
 * a header line names is drawn from those written).
 *
 * Usage: GenerateCorpus --out DIR [--count N] [--seed S] [--only FILE]
 */
public final class GenerateCorpus {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        Path out = null;
        int count = 200;
        long seed = 0x6b77697265L;
        Path only = null;
        for (int i = 0; i < args.length; ++i) {
            switch (args[i]) {
                case "--out": out = Paths.get(args[++i]); break;
                case "--count": count = Integer.parseInt(args[++i]); break;
                case "--seed": seed = Long.decode(args[++i]); break;
                case "--only": only = Paths.get(args[++i]); break;
                default: usage("unknown argument " + args[i]);
            }
        }
        if (out == null) usage("--out DIR is required");
        List<Kafka.Triple> triples = Kafka.triples();
        Set<List<Integer>> listed = null;
        if (only != null) {
            listed = readOnly(only);
            triples = restrict(triples, listed, only);
        }
        Files.createDirectories(out);
        try (var old = Files.newDirectoryStream(out, "*.jsonl")) {
            for (Path p : old) Files.delete(p);
        }

        long start = System.nanoTime();
        TreeSet<Integer> apis = new TreeSet<>();
        long messages = 0;
        int retries = 0;
        for (Kafka.Triple t : triples) {
            apis.add((int) t.api.id);
            try (BufferedWriter w = Files.newBufferedWriter(out.resolve(t.fileStem() + ".jsonl"), StandardCharsets.UTF_8)) {
                for (int i = 0; i < count; ++i) {
                    long s = mix(seed, t.api.id, t.version, t.request ? 0 : 1, i);
                    ObjectNode line = null;
                    for (int attempt = 0; line == null; ++attempt) {
                        try {
                            line = body(t, s + attempt * 0x100000000L, RandomMessage.shapeOf(i), nestedAt(t, i));
                        } catch (Exception e) {
                            if (System.getenv("KWIRE_CONFORMANCE_DEBUG") != null)
                                System.err.println(t.fileStem() + " #" + i + ": " + e);
                            if (attempt >= 20) throw new IllegalStateException(t.fileStem() + " #" + i, e);
                            ++retries;
                        }
                    }
                    w.write(MAPPER.writeValueAsString(line));
                    w.write('\n');
                    ++messages;
                }
            }
        }
        messages += headers(out, triples, count, seed);

        ObjectNode manifest = MAPPER.createObjectNode();
        manifest.put("kafka", AppInfoParser.getVersion());
        manifest.put("apis", apis.size());
        manifest.put("triples", triples.size());
        manifest.put("messagesPerTriple", count);
        manifest.put("messages", messages);
        manifest.put("seed", seed);
        if (listed != null) {
            var a = manifest.putArray("only");
            for (List<Integer> kv : listed) a.addArray().add(kv.get(0)).add(kv.get(1));
        }
        Files.writeString(out.resolve("manifest.json"), MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(manifest) + "\n");
        System.err.printf("corpus: kafka %s, %d apis, %d api-versions, %d messages (%d regenerated) in %.1f s -> %s%n",
            AppInfoParser.getVersion(), apis.size(), triples.size(), messages, retries,
            (System.nanoTime() - start) / 1e9, out);
    }

    private static void usage(String why) {
        System.err.println("GenerateCorpus: " + why);
        System.err.println("usage: GenerateCorpus --out DIR [--count N] [--seed S] [--only FILE]");
        System.exit(2);
    }

    /** The (api key, version) pairs of an --only file, in file order, each once. */
    private static Set<List<Integer>> readOnly(Path file) throws IOException {
        Set<List<Integer>> pairs = new LinkedHashSet<>();
        int number = 0;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            ++number;
            int hash = line.indexOf('#');
            String s = (hash >= 0 ? line.substring(0, hash) : line).trim();
            if (s.isEmpty()) continue;
            String[] p = s.split("\\s+");
            try {
                if (p.length != 2) throw new NumberFormatException();
                pairs.add(List.of(Integer.parseInt(p[0]), Integer.parseInt(p[1])));
            } catch (NumberFormatException e) {
                usage(file + ":" + number + ": expected \"API_KEY VERSION\", got \"" + line + "\"");
            }
        }
        if (pairs.isEmpty()) usage(file + " lists no api versions");
        return pairs;
    }

    /** The triples of the listed api versions; every listed one must be offered by the jar. */
    private static List<Kafka.Triple> restrict(List<Kafka.Triple> all, Set<List<Integer>> listed, Path file) {
        List<Kafka.Triple> kept = new ArrayList<>();
        Set<List<Integer>> offered = new LinkedHashSet<>();
        for (Kafka.Triple t : all) {
            List<Integer> kv = List.of((int) t.api.id, (int) t.version);
            offered.add(kv);
            if (listed.contains(kv)) kept.add(t);
        }
        List<String> missing = new ArrayList<>();
        for (List<Integer> kv : listed)
            if (!offered.contains(kv)) missing.add(kv.get(0) + " v" + kv.get(1));
        if (!missing.isEmpty())
            usage(file + ": kafka-clients " + AppInfoParser.getVersion() + " has no " + String.join(", ", missing));
        return kept;
    }

    /**
     * Whether message `index` of `t` carries real nested payloads (see
     * Nested): one in 32 of the apis that have them, from the third on, so
     * the committed corpus (3 per version) has one of each and the full one
     * a few hundred in all.
     */
    static boolean nestedAt(Kafka.Triple t, int index) {
        return Nested.applies(t) && index % 32 == 2;
    }

    static long mix(long seed, long api, long version, long dir, long index) {
        long h = seed;
        for (long x : new long[] {api, version, dir, index}) {
            h ^= x + 0x9E3779B97F4A7C15L + (h << 6) + (h >>> 2);
            h *= 0xBF58476D1CE4E5B9L;
        }
        return h;
    }

    /** One random body of `t`, through Kafka's classes, checked to read back to the same bytes and JSON. */
    private static ObjectNode body(Kafka.Triple t, long seed, RandomMessage.Shape shape, boolean withNested) throws Exception {
        Message empty = t.newMessage();
        RandomMessage r = new RandomMessage(Spec.load(t.specName()), t.version, seed, shape);
        ObjectNode random = r.json();
        Nested.Result nested = withNested ? Nested.fill(t, random, seed, shape) : null;
        Message m = Kafka.fromJson(empty.getClass(), random, t.version);
        r.addUnknownTags(m);
        byte[] bytes = Kafka.serialize(m, t.version);
        JsonNode json = Kafka.toJson(m, t.version);
        selfCheck(t, bytes, json);
        ObjectNode line = MAPPER.createObjectNode();
        line.put("seed", seed);
        line.put("base64", Base64.getEncoder().encodeToString(bytes));
        line.set("json", json);
        if (!r.records.isEmpty()) line.set("records", r.records);
        if (nested != null && !nested.nested.isEmpty()) line.set("nested", nested.nested);
        if (nested != null && nested.hint != null) line.set("hint", nested.hint);
        return line;
    }

    // Kafka reads its own bytes back to the same bytes and the same JSON.
    private static void selfCheck(Kafka.Triple t, byte[] bytes, JsonNode json) throws Exception {
        Message again = t.newMessage();
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        again.read(new ByteBufferAccessor(buf), t.version);
        if (buf.hasRemaining()) throw new IllegalStateException("read left " + buf.remaining() + " bytes");
        if (!Arrays.equals(bytes, Kafka.serialize(again, t.version)))
            throw new IllegalStateException(t.fileStem() + ": Kafka does not re-serialize its own bytes identically");
        if (!json.equals(Kafka.toJson(again, t.version)))
            throw new IllegalStateException(t.fileStem() + ": Kafka's JSON differs after a read");
    }

    /** Request header v0-2 and response header v0-1 corpora; returns the number of messages. */
    private static long headers(Path out, List<Kafka.Triple> triples, int count, long seed) throws Exception {
        long n = 0;
        for (int dir = 0; dir < 2; ++dir) {
            boolean request = dir == 0;
            for (short hv = 0; hv <= (request ? 2 : 1); ++hv) {
                List<Kafka.Triple> using = new ArrayList<>();
                for (Kafka.Triple t : triples)
                    if (t.request == request && t.headerVersion() == hv) using.add(t);
                if (using.isEmpty()) continue;
                String stem = (request ? "request" : "response") + "-header-v" + hv;
                try (BufferedWriter w = Files.newBufferedWriter(out.resolve(stem + ".jsonl"), StandardCharsets.UTF_8)) {
                    for (int i = 0; i < count; ++i) {
                        long s = mix(seed, 1000 + hv, 0, dir, i);
                        Kafka.Triple t = using.get(new SplittableRandom(s).nextInt(using.size()));
                        w.write(MAPPER.writeValueAsString(header(t, hv, s, RandomMessage.shapeOf(i))));
                        w.write('\n');
                        ++n;
                    }
                }
            }
        }
        return n;
    }

    private static ObjectNode header(Kafka.Triple t, short hv, long seed, RandomMessage.Shape shape) throws Exception {
        String spec = t.request ? "RequestHeader" : "ResponseHeader";
        RandomMessage r = new RandomMessage(Spec.load(spec), hv, seed, shape);
        ObjectNode json = r.json();
        Message m;
        if (t.request) {
            // The header names the message it heads.
            json.set("requestApiKey", IntNode.valueOf(t.api.id));
            json.set("requestApiVersion", IntNode.valueOf(t.version));
            m = Kafka.fromJson(RequestHeaderData.class, json, hv);
        } else {
            m = Kafka.fromJson(ResponseHeaderData.class, json, hv);
        }
        r.addUnknownTags(m);
        byte[] bytes = Kafka.serialize(m, hv);
        ObjectNode line = MAPPER.createObjectNode();
        line.put("seed", seed);
        line.put("apiKey", t.api.id);
        line.put("apiVersion", t.version);
        line.put("base64", Base64.getEncoder().encodeToString(bytes));
        line.set("json", Kafka.toJson(m, hv));
        return line;
    }
}
