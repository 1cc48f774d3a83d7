package kwire.conformance;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One message spec as shipped inside the kafka-clients jar
 * (common/message/NAME.json), the same file Kafka generated its message
 * classes from. Only what the random message builder needs: field lists per
 * struct and the version ranges of each field.
 */
final class Spec {
    private static final ObjectMapper MAPPER = new ObjectMapper().enable(JsonParser.Feature.ALLOW_COMMENTS);
    private static final Map<String, Spec> CACHE = new ConcurrentHashMap<>();

    final String name;
    final JsonNode root;
    final Versions flexible;
    private final Map<String, JsonNode> structFields = new HashMap<>();

    private Spec(String name, JsonNode root) {
        this.name = name;
        this.root = root;
        this.flexible = Versions.parse(root.path("flexibleVersions").asText("none"));
        for (JsonNode s : root.path("commonStructs")) structFields.put(s.get("name").asText(), s.get("fields"));
        index(root.path("fields"));
    }

    /** "StreamsGroupHeartbeatRequest": the spec of that message, from the jar. */
    static Spec load(String name) {
        return CACHE.computeIfAbsent(name, n -> {
            String resource = "common/message/" + n + ".json";
            try (InputStream in = Spec.class.getClassLoader().getResourceAsStream(resource)) {
                if (in == null) throw new IllegalStateException("no " + resource + " on the class path");
                return new Spec(n, MAPPER.readTree(in));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    private void index(JsonNode fields) {
        for (JsonNode f : fields) {
            if (f.has("fields")) {
                structFields.putIfAbsent(elementType(f), f.get("fields"));
                index(f.get("fields"));
            }
        }
    }

    JsonNode topFields() {
        return root.path("fields");
    }

    /** The fields of a struct-typed field (inline or a common struct). */
    JsonNode fieldsOf(JsonNode field) {
        if (field.has("fields")) return field.get("fields");
        JsonNode f = structFields.get(elementType(field));
        if (f == null) throw new IllegalStateException(name + ": no struct " + elementType(field));
        return f;
    }

    // Field accessors.
    static String fieldName(JsonNode f) {
        return f.get("name").asText();
    }

    /** The name Kafka's JSON converters and generated classes use: "MemberEpoch" -> "memberEpoch". */
    static String camel(JsonNode f) {
        String n = fieldName(f);
        return Character.toLowerCase(n.charAt(0)) + n.substring(1);
    }

    static String type(JsonNode f) {
        return f.get("type").asText();
    }

    static boolean isArray(JsonNode f) {
        return type(f).startsWith("[]");
    }

    static String elementType(JsonNode f) {
        String t = type(f);
        return t.startsWith("[]") ? t.substring(2) : t;
    }

    static boolean isPrimitive(String t) {
        switch (t) {
            case "bool": case "int8": case "int16": case "int32": case "int64": case "uint16": case "uint32":
            case "float64": case "string": case "bytes": case "uuid": case "records":
                return true;
            default:
                return false;
        }
    }

    static Versions versions(JsonNode f) {
        return Versions.parse(f.path("versions").asText("none"));
    }

    static Versions nullable(JsonNode f) {
        return Versions.parse(f.path("nullableVersions").asText("none"));
    }

    static Versions tagged(JsonNode f) {
        return Versions.parse(f.path("taggedVersions").asText("none"));
    }

    static int tag(JsonNode f) {
        return f.path("tag").asInt(-1);
    }

    /** "0+", "1-3", "5", "none". */
    static final class Versions {
        static final Versions NONE = new Versions(0, -1);
        final int lo;
        final int hi;

        Versions(int lo, int hi) {
            this.lo = lo;
            this.hi = hi;
        }

        static Versions parse(String s) {
            s = s.trim();
            if (s.isEmpty() || s.equals("none")) return NONE;
            if (s.endsWith("+")) return new Versions(Integer.parseInt(s.substring(0, s.length() - 1)), Short.MAX_VALUE);
            int dash = s.indexOf('-');
            if (dash > 0) return new Versions(Integer.parseInt(s.substring(0, dash)), Integer.parseInt(s.substring(dash + 1)));
            int v = Integer.parseInt(s);
            return new Versions(v, v);
        }

        boolean contains(int v) {
            return v >= lo && v <= hi;
        }
    }
}
