package kwire.testbed.old;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The KIP-1331 appendix topology (orders -> filter -> valid-orders) on Kafka Streams
 * 4.3.1 with group.protocol=streams, against a 4.4.0 broker: StreamsGroupHeartbeat v0
 * (no TopologyDescriptionRequired, so no topology push), StreamsGroupDescribe v0 from
 * the 4.3.1 Admin client while the member is live, and -- after the app has left --
 * deleteStreamsGroups from the 4.3.1 Admin client (DeleteGroups v2).
 *
 * <p>args: bootstrap [app-id=orders-app-43] [stay=8] [delete=true]
 */
public final class OldOrdersApp {
    private static final String SOURCE = "orders";
    private static final String SINK = "valid-orders";

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Map<String, String> opt = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            opt.put(kv[0], kv[1]);
        }
        String appId = opt.getOrDefault("app-id", "orders-app-43");
        int stay = Integer.parseInt(opt.getOrDefault("stay", "8"));
        boolean delete = Boolean.parseBoolean(opt.getOrDefault("delete", "true"));
        log("Kafka clients version %s", AppInfoParser.getVersion());

        Path stateDir = Files.createTempDirectory("kwire-streams-state-43");
        Properties sp = new Properties();
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        sp.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        sp.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        sp.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "1000");
        sp.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");

        StreamsBuilder b = new StreamsBuilder();
        b.stream(SOURCE, Consumed.with(Serdes.String(), Serdes.String()))
            .filter((k, v) -> v != null && !v.isEmpty())
            .to(SINK, Produced.with(Serdes.String(), Serdes.String()));
        Topology topology = b.build();
        log("topology:%n%s", topology.describe());

        CountDownLatch running = new CountDownLatch(1);
        try (KafkaStreams streams = new KafkaStreams(topology, sp);
             Admin admin = Admin.create(adminProps(bootstrap))) {
            streams.setStateListener((now, before) -> {
                log("streams state %s -> %s", before, now);
                if (now == KafkaStreams.State.RUNNING) running.countDown();
            });
            streams.start();
            if (!running.await(90, TimeUnit.SECONDS)) {
                throw new IllegalStateException("streams app did not reach RUNNING; state=" + streams.state());
            }

            String tag = "@" + appId;
            Properties pp = new Properties();
            pp.put("bootstrap.servers", bootstrap);
            pp.put("client.id", "kwire-orders-producer-43");
            pp.put("key.serializer", StringSerializer.class.getName());
            pp.put("value.serializer", StringSerializer.class.getName());
            List<String> values = List.of("order-1:widget", "", "order-2:gadget", "order-3:gizmo");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
                int i = 0;
                for (String v : values) {
                    producer.send(new ProducerRecord<>(SOURCE, "k" + (i++), v.isEmpty() ? v : v + tag)).get(30, TimeUnit.SECONDS);
                }
            }
            long expected = values.stream().filter(v -> !v.isEmpty()).count();

            Properties cp = new Properties();
            cp.put("bootstrap.servers", bootstrap);
            cp.put("client.id", "kwire-valid-orders-reader-43");
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            cp.put("enable.auto.commit", "false");
            List<String> seen = new ArrayList<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
                TopicPartition tp = new TopicPartition(SINK, 0);
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (seen.size() < expected && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                        if (r.value().endsWith(tag)) seen.add(r.value());
                    }
                }
            }
            log("read %d records of this run from %s: %s", seen.size(), SINK, seen);
            if (seen.size() < expected) throw new IllegalStateException("expected " + expected + " records");

            log("staying up %d s for heartbeat rounds", stay);
            Thread.sleep(TimeUnit.SECONDS.toMillis(stay));
            StreamsGroupDescription d = admin.describeStreamsGroups(List.of(appId)).all()
                .get(30, TimeUnit.SECONDS).get(appId);
            // (4.3.1's StreamsGroupDescription.toString() throws when authorized operations were not asked for.)
            log("live describe (4.3.1 Admin): group=%s state=%s groupEpoch=%d targetEpoch=%d topologyEpoch=%d members=%s",
                d.groupId(), d.groupState(), d.groupEpoch(), d.targetAssignmentEpoch(), d.topologyEpoch(),
                d.members().stream().map(m -> m.memberId() + "@" + m.memberEpoch() + " active=" + m.assignment().activeTasks()).toList());

            log("closing streams app");
            if (!streams.close(Duration.ofSeconds(30))) throw new IllegalStateException("streams did not close");
            if (delete) {
                admin.deleteStreamsGroups(List.of(appId)).all().get(30, TimeUnit.SECONDS);
                log("deleteStreamsGroups (4.3.1 Admin): %s deleted", appId);
            }
        } finally {
            try (var walk = Files.walk(stateDir)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static Properties adminProps(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "kwire-admin-43");
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        return p;
    }

    private static void log(String fmt, Object... args) {
        System.out.printf("[%s] %s%n", java.time.LocalTime.now().withNano(0), String.format(fmt, args));
        System.out.flush();
    }
}
