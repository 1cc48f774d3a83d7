package kwire.testbed;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The KIP-1331 appendix application: orders -> filter(non-empty value) -> valid-orders,
 * run with group.protocol=streams. It joins the streams group, waits for RUNNING,
 * produces a few records, checks the filtered output, stays up for a while so several
 * StreamsGroupHeartbeat rounds happen, describes the group while its member is live,
 * then closes cleanly (the member leaves the group).
 *
 * args: bootstrap [stay-seconds [state-dir]]  (a temp state dir is made and removed when none is given)
 */
public final class OrdersApp {

    static Topology topology() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(Common.SOURCE_TOPIC, Consumed.with(Serdes.String(), Serdes.String()))
            .filter((key, value) -> value != null && !value.isEmpty())
            .to(Common.SINK_TOPIC, Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        int staySeconds = args.length > 1 ? Integer.parseInt(args[1]) : 12;
        Path stateDir = args.length > 2
            ? Files.createDirectories(Path.of(args[2]))
            : Files.createTempDirectory("kwire-streams-state");

        Properties sp = new Properties();
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, Common.APPLICATION_ID);
        sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        sp.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        sp.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        sp.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "1000");
        sp.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");

        Topology topology = topology();
        Common.log("topology:%n%s", topology.describe());

        CountDownLatch running = new CountDownLatch(1);
        try (KafkaStreams streams = new KafkaStreams(topology, sp)) {
            streams.setStateListener((now, before) -> {
                Common.log("streams state %s -> %s", before, now);
                if (now == KafkaStreams.State.RUNNING) running.countDown();
            });
            streams.start();
            if (!running.await(90, TimeUnit.SECONDS)) {
                throw new IllegalStateException("streams app did not reach RUNNING; state=" + streams.state());
            }

            List<String> values = List.of("order-1:widget", "", "order-2:gadget", "", "order-3:gizmo", "order-4:doohickey");
            Properties pp = new Properties();
            pp.put("bootstrap.servers", bootstrap);
            pp.put("client.id", "kwire-orders-producer");
            pp.put("key.serializer", StringSerializer.class.getName());
            pp.put("value.serializer", StringSerializer.class.getName());
            pp.put("linger.ms", "0");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
                int i = 0;
                for (String v : values) {
                    producer.send(new ProducerRecord<>(Common.SOURCE_TOPIC, "k" + (i++), v)).get(30, TimeUnit.SECONDS);
                }
            }
            long expected = values.stream().filter(v -> !v.isEmpty()).count();
            Common.log("produced %d records to %s (%d non-empty)", values.size(), Common.SOURCE_TOPIC, expected);

            // Read the sink without a consumer group (assign + seek), so the only group
            // traffic in the capture is the streams group itself.
            Properties cp = new Properties();
            cp.put("bootstrap.servers", bootstrap);
            cp.put("client.id", "kwire-valid-orders-reader");
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            cp.put("enable.auto.commit", "false");
            cp.put("auto.offset.reset", "earliest");
            List<String> seen = new ArrayList<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
                TopicPartition tp = new TopicPartition(Common.SINK_TOPIC, 0);
                consumer.assign(Set.of(tp));
                consumer.seekToBeginning(Set.of(tp));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (seen.size() < expected && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                        seen.add(r.value());
                    }
                }
            }
            Common.log("read %d records from %s: %s", seen.size(), Common.SINK_TOPIC, seen);
            if (seen.size() != expected) {
                throw new IllegalStateException("expected " + expected + " filtered records, got " + seen.size());
            }

            Common.log("staying up %d s for heartbeat rounds", staySeconds);
            Thread.sleep(TimeUnit.SECONDS.toMillis(staySeconds));

            try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-live-describer"))) {
                StreamsGroupDescription d = admin.describeStreamsGroups(List.of(Common.APPLICATION_ID),
                        new DescribeStreamsGroupsOptions().includeTopologyDescription(true)
                            .includeAuthorizedOperations(true))
                    .all().get(30, TimeUnit.SECONDS).get(Common.APPLICATION_ID);
                Common.log("live describe: state=%s groupEpoch=%d members=%d topologyStatus=%s topology=%s",
                    d.groupState(), d.groupEpoch(), d.members().size(), d.topologyDescriptionStatus(),
                    d.topologyDescription().map(Object::toString).orElse("<none>"));
            }

            Common.log("closing streams app");
            if (!streams.close(Duration.ofSeconds(30))) {
                throw new IllegalStateException("streams did not close within 30 s");
            }
            Common.log("streams closed, state=%s", streams.state());
        } finally {
            try (var walk = Files.walk(stateDir)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
