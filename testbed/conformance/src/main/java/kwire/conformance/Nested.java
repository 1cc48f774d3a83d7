package kwire.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BinaryNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.message.ConsumerProtocolAssignment;
import org.apache.kafka.common.message.ConsumerProtocolSubscription;
import org.apache.kafka.common.message.DefaultPrincipalData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Payloads inside payloads, made by Kafka's classes: a random JoinGroup,
 * SyncGroup, DescribeGroups response or Envelope message (as the JSON its converter reads) gets bytes
 * fields that carry real serialized structures, and the corpus line says what
 * they are:
 *
 *   "nested": [{"path": JSON pointer of the bytes field in the body JSON,
 *               "json": Kafka's JSON of the payload}]
 *   "hint":   what a response needs from its request ({"consumerProtocol": true}
 *             or {"innerApiKey": K, "innerApiVersion": V})   (responses only)
 *
 * Consumer protocol subscriptions and assignments are the generated
 * ConsumerProtocolSubscription/Assignment at a random version, version-prefixed
 * by MessageUtil as ConsumerProtocol does; their JSON is the converter's with
 * "version" added. The Envelope's RequestPrincipal is DefaultPrincipalData the
 * same way (as DefaultKafkaPrincipalBuilder serializes it); its RequestData is
 * a random request of another api, its header then its body as Kafka
 * serializes them, and ResponseData likewise a response: JSON
 * {"header": ..., "body": ...}. Enveloped messages are drawn from apis without
 * records or sensitive fields, whose JSON kwire renders differently on
 * purpose (see tests/test_conformance.cpp); unknown tagged fields are not
 * added to them (Kafka's converters drop those).
 */
final class Nested {
    private Nested() {}

    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    /** Whether messages of this api carry nested payloads kwire decodes. */
    static boolean applies(Kafka.Triple t) {
        return t.api == ApiKeys.JOIN_GROUP || t.api == ApiKeys.SYNC_GROUP || t.api == ApiKeys.ENVELOPE
            || (t.api == ApiKeys.DESCRIBE_GROUPS && !t.request);
    }

    /** What fill() adds to the corpus line. */
    static final class Result {
        final ArrayNode nested = F.arrayNode();
        ObjectNode hint;
    }

    /** Rewrites `json` (the body JSON of `t`) so its payload fields carry real serialized structures. */
    static Result fill(Kafka.Triple t, ObjectNode json, long seed, RandomMessage.Shape shape) throws Exception {
        SplittableRandom rnd = new SplittableRandom(seed ^ 0x6e6573746564L);
        Result r = new Result();
        if (t.api == ApiKeys.JOIN_GROUP) {
            consumerType(t, json, r, 7);
            String array = t.request ? "protocols" : "members";
            int i = 0;
            for (JsonNode e : json.withArray(array))
                ((ObjectNode) e).set("metadata", consumerData(ConsumerProtocolSubscription.class, "ConsumerProtocolSubscription",
                    rnd, shape, "/" + array + "/" + i++ + "/metadata", r));
        } else if (t.api == ApiKeys.SYNC_GROUP) {
            if (t.request && t.version < 5) return r;  // no protocol type anywhere: kwire keeps the bytes
            consumerType(t, json, r, 5);
            if (t.request) {
                int i = 0;
                for (JsonNode e : json.withArray("assignments"))
                    ((ObjectNode) e).set("assignment", consumerData(ConsumerProtocolAssignment.class, "ConsumerProtocolAssignment",
                        rnd, shape, "/assignments/" + i++ + "/assignment", r));
            } else {
                json.set("assignment", consumerData(ConsumerProtocolAssignment.class, "ConsumerProtocolAssignment", rnd, shape,
                    "/assignment", r));
            }
        } else if (t.api == ApiKeys.DESCRIBE_GROUPS) {
            // Each group of protocol type "consumer": its members' subscriptions and assignments.
            int g = 0;
            for (JsonNode group : json.withArray("groups")) {
                ((ObjectNode) group).put("protocolType", "consumer");
                int m = 0;
                for (JsonNode member : ((ObjectNode) group).withArray("members")) {
                    String at = "/groups/" + g + "/members/" + m++;
                    ((ObjectNode) member).set("memberMetadata", consumerData(ConsumerProtocolSubscription.class,
                        "ConsumerProtocolSubscription", rnd, shape, at + "/memberMetadata", r));
                    ((ObjectNode) member).set("memberAssignment", consumerData(ConsumerProtocolAssignment.class,
                        "ConsumerProtocolAssignment", rnd, shape, at + "/memberAssignment", r));
                }
                ++g;
            }
        } else if (t.api == ApiKeys.ENVELOPE) {
            if (t.request) {
                json.set("requestData", message(true, rnd, shape, "/requestData", r));
                json.set("requestPrincipal", versionPrefixed(DefaultPrincipalData.class, "DefaultPrincipalData", (short) 0, rnd, shape,
                    "/requestPrincipal", r));
            } else {
                json.set("responseData", message(false, rnd, shape, "/responseData", r));
            }
        }
        return r;
    }

    /** ProtocolType "consumer" in the message from version `since`; before it, in the request (a hint). */
    private static void consumerType(Kafka.Triple t, ObjectNode json, Result r, int since) {
        if (t.request || t.version >= since) json.put("protocolType", "consumer");
        if (!t.request && t.version < since) r.hint = F.objectNode().put("consumerProtocol", true);
    }

    private static BinaryNode consumerData(Class<? extends Message> cls, String spec, SplittableRandom rnd, RandomMessage.Shape shape,
                                       String path, Result r) throws Exception {
        short version = (short) rnd.nextInt(4);  // 0-3, the versions of both specs in 4.4.0
        return versionPrefixed(cls, spec, version, rnd, shape, path, r);
    }

    /** A random `spec` struct at `version`, as MessageUtil.toVersionPrefixedBytes writes it. */
    private static BinaryNode versionPrefixed(Class<? extends Message> cls, String spec, short version, SplittableRandom rnd,
                                          RandomMessage.Shape shape, String path, Result r) throws Exception {
        RandomMessage random = new RandomMessage(Spec.load(spec), version, rnd.nextLong(), shape);
        Message m = Kafka.fromJson(cls, random.json(), version);
        byte[] bytes = MessageUtil.toVersionPrefixedBytes(version, m);
        ObjectNode json = F.objectNode().put("version", version);
        json.setAll((ObjectNode) Kafka.toJson(m, version));
        r.nested.add(F.objectNode().put("path", path).set("json", json));
        return new BinaryNode(bytes);
    }

    // Apis whose JSON kwire writes differently from Kafka's on purpose:
    // records (batches, not ""), sensitive fields ("<redacted>").
    private static final Set<ApiKeys> NOT_ENVELOPED = Set.of(
        ApiKeys.ENVELOPE, ApiKeys.PRODUCE, ApiKeys.FETCH, ApiKeys.SASL_AUTHENTICATE, ApiKeys.CREATE_DELEGATION_TOKEN,
        ApiKeys.RENEW_DELEGATION_TOKEN, ApiKeys.EXPIRE_DELEGATION_TOKEN, ApiKeys.DESCRIBE_DELEGATION_TOKEN,
        ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, ApiKeys.FETCH_SNAPSHOT, ApiKeys.SHARE_FETCH);

    /** A random request or response of another api, header then body. */
    private static BinaryNode message(boolean request, SplittableRandom rnd, RandomMessage.Shape shape, String path, Result r)
        throws Exception {
        List<Kafka.Triple> all = Kafka.triples();
        for (int attempt = 0; ; ++attempt) {
            Kafka.Triple t = all.get(rnd.nextInt(all.size()));
            if (t.request != request || NOT_ENVELOPED.contains(t.api)) continue;
            RandomMessage body = new RandomMessage(Spec.load(t.specName()), t.version, rnd.nextLong(), shape);
            Message m;
            try {
                m = Kafka.fromJson(t.newMessage().getClass(), body.json(), t.version);
            } catch (Exception e) {
                if (attempt >= 50) throw e;
                continue;  // a random value the converter refuses: draw again
            }
            if (!body.records.isEmpty()) continue;
            short hv = t.headerVersion();
            RandomMessage hr = new RandomMessage(Spec.load(request ? "RequestHeader" : "ResponseHeader"), hv, rnd.nextLong(), shape);
            ObjectNode hj = hr.json();
            Message header;
            if (request) {
                hj.put("requestApiKey", t.api.id);
                hj.put("requestApiVersion", t.version);
                header = Kafka.fromJson(RequestHeaderData.class, hj, hv);
            } else {
                header = Kafka.fromJson(ResponseHeaderData.class, hj, hv);
                r.hint = F.objectNode().put("innerApiKey", t.api.id).put("innerApiVersion", t.version);
            }
            byte[] hb = Kafka.serialize(header, hv);
            byte[] bb = Kafka.serialize(m, t.version);
            ByteBuffer both = ByteBuffer.allocate(hb.length + bb.length).put(hb).put(bb);
            ObjectNode json = F.objectNode();
            json.set("header", Kafka.toJson(header, hv));
            json.set("body", Kafka.toJson(m, t.version));
            r.nested.add(F.objectNode().put("path", path).set("json", json));
            return new BinaryNode(both.array());
        }
    }
}
