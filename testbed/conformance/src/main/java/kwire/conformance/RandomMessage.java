package kwire.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BinaryNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.types.RawTaggedField;

import java.lang.reflect.Field;
import java.util.SplittableRandom;
import java.util.TreeSet;

/**
 * A seeded random message of one spec version, built as the JsonNode that
 * Kafka's generated JSON converter reads (so the values go through Kafka's own
 * classes), plus unknown tagged fields added afterwards to the message objects.
 *
 * Messages come in four shapes, chosen by the message's index (0 MINIMAL,
 * 1 FULL, 3 LARGE, the rest MIXED; so a corpus of three per version has both
 * extremes and one of each eight is LARGE):
 * MINIMAL (nulls wherever nullable, empty arrays and strings, tagged fields
 * absent), FULL (nothing null, every tagged field and some unknown ones
 * present, records with several batches), LARGE (one array of 100+ elements)
 * and MIXED (everything random).
 */
final class RandomMessage {
    enum Shape { MINIMAL, FULL, LARGE, MIXED }

    static Shape shapeOf(int index) {
        switch (index % 8) {
            case 0: return Shape.MINIMAL;
            case 1: return Shape.FULL;
            case 3: return Shape.LARGE;
            default: return Shape.MIXED;
        }
    }

    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private final Spec spec;
    private final short version;
    private final SplittableRandom rnd;
    private final Shape shape;
    private final boolean flexible;
    private int budget;            // array elements left for this message (the large array excepted)
    private boolean largeDone;
    private boolean terse;         // inside a large array: short strings and bytes
    /** Records fields: {"path": JSON pointer into the body JSON, "batches": Kafka's reading of them}. */
    final ArrayNode records = F.arrayNode();

    RandomMessage(Spec spec, short version, long seed, Shape shape) {
        this.spec = spec;
        this.version = version;
        this.rnd = new SplittableRandom(seed);
        this.shape = shape;
        this.flexible = spec.flexible.contains(version);
        this.budget = shape == Shape.FULL ? 40 : 24;
    }

    /** The whole message as JSON for `<Name>JsonConverter.read(node, version)`. */
    ObjectNode json() {
        return struct(spec.topFields(), "", 0);
    }

    private boolean chance(double p) {
        return rnd.nextDouble() < p;
    }

    private ObjectNode struct(JsonNode fields, String path, int depth) {
        ObjectNode o = F.objectNode();
        for (JsonNode f : fields) {
            if (!Spec.versions(f).contains(version)) continue;
            boolean tagged = Spec.tagged(f).contains(version);
            if (tagged) {
                // Absent: Kafka's reader leaves the default, and its writer omits a default tagged field.
                double present = shape == Shape.MINIMAL ? 0.0 : shape == Shape.FULL ? 1.0 : 0.5;
                if (!chance(present)) continue;
            }
            String name = Spec.camel(f);
            o.set(name, value(f, path + "/" + name, depth));
        }
        return o;
    }

    private double nullChance() {
        switch (shape) {
            case MINIMAL: return 0.9;
            case FULL: return 0.0;
            default: return 0.2;
        }
    }

    private JsonNode value(JsonNode f, String path, int depth) {
        boolean nullable = Spec.nullable(f).contains(version);
        if (nullable && chance(nullChance())) return NullNode.instance;
        String t = Spec.elementType(f);
        if (Spec.isArray(f)) return array(f, t, path, depth);
        if (!Spec.isPrimitive(t)) return struct(spec.fieldsOf(f), path, depth + 1);
        return primitive(t, path);
    }

    private JsonNode array(JsonNode f, String t, String path, int depth) {
        int count;
        if (shape == Shape.LARGE && !largeDone && depth <= 1) {
            largeDone = true;
            count = 100 + rnd.nextInt(120);
        } else if (shape == Shape.MINIMAL || budget <= 0) {
            count = 0;
        } else {
            int max = depth >= 2 ? 2 : shape == Shape.FULL ? 4 : 5;
            count = Math.min(budget, (shape == Shape.FULL ? 1 : 0) + rnd.nextInt(max));
            budget -= count;
        }
        ArrayNode a = F.arrayNode();
        boolean structs = !Spec.isPrimitive(t);
        for (int i = 0; i < count; ++i) {
            String p = path + "/" + i;
            if (structs) {
                // Elements of a large array stay small: their own arrays get no budget.
                int saved = budget;
                if (count >= 100) {
                    budget = 0;
                    terse = true;
                }
                a.add(struct(spec.fieldsOf(f), p, depth + 1));
                if (count >= 100) {
                    budget = saved;
                    terse = false;
                }
            } else {
                a.add(primitive(t, p));
            }
        }
        return a;
    }

    private JsonNode primitive(String t, String path) {
        switch (t) {
            case "bool": return BooleanNode.valueOf(rnd.nextBoolean());
            case "int8": return IntNode.valueOf((int) integer(Byte.MIN_VALUE, Byte.MAX_VALUE));
            case "int16": return IntNode.valueOf((int) integer(Short.MIN_VALUE, Short.MAX_VALUE));
            case "uint16": return IntNode.valueOf((int) integer(0, 65535));
            case "int32": return IntNode.valueOf((int) integer(Integer.MIN_VALUE, Integer.MAX_VALUE));
            case "uint32": return LongNode.valueOf(integer(0, 4294967295L));
            case "int64": return LongNode.valueOf(integer(Long.MIN_VALUE, Long.MAX_VALUE));
            case "float64": return DoubleNode.valueOf(float64());
            case "uuid": return TextNode.valueOf(uuid().toString());
            case "string": return TextNode.valueOf(Text.random(rnd, shape == Shape.MINIMAL ? 0 : stringLength()));
            case "bytes": return new BinaryNode(bytes(shape == Shape.MINIMAL ? 0 : stringLength()));
            case "records": return records(path);
            default: throw new IllegalStateException("type " + t);
        }
    }

    private int stringLength() {
        if (terse) return rnd.nextInt(3);
        if (chance(0.03)) return 200 + rnd.nextInt(200);
        return rnd.nextInt(shape == Shape.FULL ? 1 : 0, 24);
    }

    private long integer(long min, long max) {
        if (shape == Shape.MINIMAL && chance(0.5)) return Math.max(min, 0);
        if (chance(0.25)) {
            long[] edge = {min, max, 0, 1, -1, min + 1, max - 1};
            long v = edge[rnd.nextInt(edge.length)];
            return Math.max(min, Math.min(max, v));
        }
        if (chance(0.5)) return Math.max(min, Math.min(max, rnd.nextLong(-1000, 1000)));
        if (max == Long.MAX_VALUE) return rnd.nextLong();
        return rnd.nextLong(min, max + 1);
    }

    private double float64() {
        if (chance(0.15)) {
            double[] edge = {0.0, -0.0, 1.0, -1.5, Double.MIN_VALUE, Double.MAX_VALUE, -Double.MAX_VALUE,
                             Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 1e-300, 123456789.125};
            return edge[rnd.nextInt(edge.length)];
        }
        if (chance(0.5)) return rnd.nextInt(-100000, 100000) / 8.0;
        return Double.longBitsToDouble(rnd.nextLong() & 0x7fefffffffffffffL) * (rnd.nextBoolean() ? 1 : -1);
    }

    private Uuid uuid() {
        if (shape == Shape.MINIMAL || chance(0.1)) return Uuid.ZERO_UUID;
        return new Uuid(rnd.nextLong(), rnd.nextLong());
    }

    private byte[] bytes(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; ++i) b[i] = (byte) rnd.nextInt(256);
        return b;
    }

    private JsonNode records(String path) {
        RandomRecords.Built r = shape == Shape.MINIMAL
            ? RandomRecords.empty()
            : RandomRecords.make(rnd, shape == Shape.FULL ? 2 + rnd.nextInt(2) : rnd.nextInt(3),
                                 RandomRecords.magicOf(spec.name, version));
        ObjectNode d = F.objectNode();
        d.put("path", path);
        d.set("batches", RecordsView.describe(r.records));
        records.add(d);
        return new BinaryNode(r.bytes);
    }

    // ---- unknown tagged fields, added to the message objects Kafka built ----

    /**
     * Adds unknown tagged fields (tags no field of the struct uses in any
     * version, ascending as Kafka's writer requires) to `message` and its
     * nested structs. Kafka keeps them and writes them between and after the
     * known tagged fields by tag.
     */
    void addUnknownTags(Message message) {
        if (flexible) addUnknownTags(message, spec.topFields());
    }

    private void addUnknownTags(Message m, JsonNode fields) {
        double p = shape == Shape.FULL ? 0.6 : shape == Shape.MIXED ? 0.15 : 0.0;
        if (chance(p)) {
            // Kafka's reader rejects a tag the struct uses in any version, not only in this one.
            TreeSet<Integer> known = new TreeSet<>();
            for (JsonNode f : fields)
                if (Spec.tag(f) >= 0) known.add(Spec.tag(f));
            int top = known.isEmpty() ? 0 : known.last();
            TreeSet<Integer> tags = new TreeSet<>();
            int n = 1 + rnd.nextInt(3);
            for (int i = 0; i < n; ++i) {
                int tag = chance(0.2) ? 1000 + rnd.nextInt(100000) : rnd.nextInt(top + 8);
                if (!known.contains(tag)) tags.add(tag);
            }
            for (int tag : tags) m.unknownTaggedFields().add(new RawTaggedField(tag, bytes(rnd.nextInt(12))));
        }
        for (JsonNode f : fields) {
            if (!Spec.versions(f).contains(version) || Spec.isPrimitive(Spec.elementType(f))) continue;
            Object v = get(m, Spec.camel(f));
            if (v instanceof Message) {
                addUnknownTags((Message) v, spec.fieldsOf(f));
            } else if (v instanceof Iterable) {
                for (Object e : (Iterable<?>) v) addUnknownTags((Message) e, spec.fieldsOf(f));
            }
        }
    }

    private static Object get(Object o, String field) {
        try {
            Field fl = o.getClass().getDeclaredField(field);
            fl.setAccessible(true);
            return fl.get(o);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(o.getClass().getSimpleName() + "." + field, e);
        }
    }

    /** Random text: ASCII, escapes, control characters, Latin, CJK, emoji (surrogate pairs), line separators. */
    static final class Text {
        private static final String[] PIECES = {
            "a", "Z", "q", "orders", "streams-app", "0", "9", " ", "-", "_", ".", "/", ":", "\"", "\\", "'",
            "\u0000", "\u0001", "\n", "\t", "\u001f", "\u007f", "é", "ß", "Ω", "ж", "\u00a0", "中", "文", "日",
            "\uD83D\uDE42", "\uD83D\uDE80", "\uD834\uDD1E", "\u2028", "\u2029", "\uFEFF", "\uFFFD", "\uFFFF", "\u0301",
        };

        static String random(SplittableRandom rnd, int n) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < n; ++i) {
                if (rnd.nextInt(3) == 0) sb.append(PIECES[rnd.nextInt(PIECES.length)]);
                else sb.append((char) ('a' + rnd.nextInt(26)));
            }
            return sb.toString();
        }
    }
}
