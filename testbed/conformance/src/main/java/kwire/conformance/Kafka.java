package kwire.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/** Kafka's generated message classes and JSON converters, found by reflection. */
final class Kafka {
    private Kafka() {}

    /** One (api key, version, direction) the jar offers. */
    static final class Triple {
        final ApiKeys api;
        final short version;
        final boolean request;

        Triple(ApiKeys api, short version, boolean request) {
            this.api = api;
            this.version = version;
            this.request = request;
        }

        Message newMessage() {
            return request ? api.messageType.newRequest() : api.messageType.newResponse();
        }

        /** "StreamsGroupHeartbeatRequest": the spec and class name (less "Data"). */
        String specName() {
            return specNameOf(newMessage());
        }

        String apiName() {
            String s = specName();
            return s.substring(0, s.length() - (request ? "Request" : "Response").length());
        }

        /** "088-StreamsGroupHeartbeat-v1-response". */
        String fileStem() {
            return String.format("%03d-%s-v%d-%s", api.id, apiName(), version, request ? "request" : "response");
        }

        short headerVersion() {
            return request ? api.requestHeaderVersion(version) : api.responseHeaderVersion(version);
        }
    }

    /** Every api key, every version from the oldest to the newest (unstable included), both directions. */
    static List<Triple> triples() {
        List<Triple> out = new ArrayList<>();
        for (ApiKeys k : ApiKeys.values()) {
            for (short v = k.oldestVersion(); v <= k.latestVersion(true); ++v) {
                out.add(new Triple(k, v, true));
                out.add(new Triple(k, v, false));
            }
        }
        return out;
    }

    static String specNameOf(Message m) {
        String s = m.getClass().getSimpleName();
        if (!s.endsWith("Data")) throw new IllegalStateException("unexpected message class " + s);
        return s.substring(0, s.length() - 4);
    }

    private static Class<?> converter(Class<?> data) throws ClassNotFoundException {
        return Class.forName(data.getName() + "JsonConverter");
    }

    /** `<Name>JsonConverter.read(node, version)`. */
    @SuppressWarnings("unchecked")
    static <T extends Message> T fromJson(Class<T> cls, JsonNode node, short version) throws Exception {
        Method read = converter(cls).getMethod("read", JsonNode.class, short.class);
        return (T) invoke(read, node, version);
    }

    /** `<Name>JsonConverter.write(message, version)` (records serialized, i.e. written as ""). */
    static JsonNode toJson(Message m, short version) throws Exception {
        Method write = converter(m.getClass()).getMethod("write", m.getClass(), short.class);
        return (JsonNode) invoke(write, m, version);
    }

    private static Object invoke(Method m, Object... args) throws Exception {
        try {
            return m.invoke(null, args);
        } catch (InvocationTargetException e) {
            Throwable c = e.getCause();
            if (c instanceof Exception) throw (Exception) c;
            throw e;
        }
    }

    /** The message's bytes as Kafka writes them (no size prefix, no header). */
    static byte[] serialize(Message m, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = m.size(cache, version);
        ByteBuffer buf = ByteBuffer.allocate(size);
        m.write(new ByteBufferAccessor(buf), cache, version);
        if (buf.hasRemaining()) throw new IllegalStateException("size() said " + size + ", write() left " + buf.remaining());
        return buf.array();
    }
}
