package kwire.testbed;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/** Small helpers shared by the testbed programs. */
final class Common {
    private Common() { }

    static final String SOURCE_TOPIC = "orders";
    static final String SINK_TOPIC = "valid-orders";
    static final String APPLICATION_ID = "orders-app";

    static String bootstrap(String[] args) {
        if (args.length < 1 || args[0].isBlank()) {
            throw new IllegalArgumentException("usage: <bootstrap host:port> [key=value ...]");
        }
        return args[0];
    }

    /** key=value arguments after the bootstrap address. */
    static Map<String, String> options(String[] args) {
        Map<String, String> out = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("expected key=value, got " + args[i]);
            out.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        return out;
    }

    /** Names a java.util.Properties file of extra client configs (system property, then env). */
    static final String CLIENT_CONFIG_PROPERTY = "kwire.client.config";
    static final String CLIENT_CONFIG_ENV = "KWIRE_CLIENT_CONFIG";
    private static Properties clientConfig;

    /**
     * The extra client configs: the file named by -Dkwire.client.config (or $KWIRE_CLIENT_CONFIG),
     * e.g. security.protocol, ssl.truststore.*, ssl.enabled.protocols, ssl.cipher.suites,
     * sasl.mechanism, sasl.jaas.config; empty without one. Read once per JVM.
     */
    static synchronized Properties clientConfig() {
        if (clientConfig == null) {
            Properties p = new Properties();
            String file = System.getProperty(CLIENT_CONFIG_PROPERTY);
            if (file == null || file.isBlank()) file = System.getenv(CLIENT_CONFIG_ENV);
            if (file != null && !file.isBlank()) {
                try (var in = Files.newInputStream(Path.of(file))) {
                    p.load(in);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException("client config " + file, e);
                }
                String keys = p.stringPropertyNames().stream().sorted()
                    .map(k -> k.contains("password") || k.contains("jaas") ? k + "=<hidden>" : k + "=" + p.getProperty(k))
                    .collect(Collectors.joining(", "));
                log("client config %s: %s", file, keys);
            }
            clientConfig = p;
        }
        return clientConfig;
    }

    /** Puts the extra client configs into {@code p} (they win) and returns it. */
    static Properties withClientConfig(Properties p) {
        p.putAll(clientConfig());
        return p;
    }

    static Properties adminProps(String bootstrap, String clientId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId);
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        return withClientConfig(p);
    }

    /** Streams settings every testbed app uses: group.protocol=streams, string serdes, 1 s commits. */
    static Properties streamsProps(String bootstrap, String applicationId, Path stateDir) {
        Properties sp = new Properties();
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        sp.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        sp.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        sp.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "1000");
        sp.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        return withClientConfig(sp);
    }

    /** Waits until the app is in {@code want}; fails early on ERROR / NOT_RUNNING. */
    static void awaitState(KafkaStreams streams, KafkaStreams.State want, int seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (streams.state() != want) {
            KafkaStreams.State s = streams.state();
            if (want != s && (s == KafkaStreams.State.ERROR || s == KafkaStreams.State.NOT_RUNNING
                    || s == KafkaStreams.State.PENDING_ERROR)) {
                throw new IllegalStateException("streams app is " + s + " while waiting for " + want);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("streams app did not reach " + want + " in " + seconds + " s; state=" + s);
            }
            Thread.sleep(100);
        }
    }

    static void produce(String bootstrap, String clientId, String topic, List<String[]> keyValues) throws Exception {
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("client.id", clientId);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        pp.put("linger.ms", "5");
        withClientConfig(pp);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
            for (String[] kv : keyValues) {
                sent.add(producer.send(new ProducerRecord<>(topic, kv[0], kv[1])));
            }
            for (var f : sent) f.get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Reads a topic from the beginning without a consumer group (assign + seek), until
     * {@code atLeast} records passing {@code keep} were seen or the timeout passed; returns
     * those records as "key=value" strings.
     */
    static List<String> readAll(String bootstrap, String clientId, String topic, int partitions,
                                java.util.function.Predicate<String> keep, int atLeast, int seconds) {
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("client.id", clientId);
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        cp.put("enable.auto.commit", "false");
        cp.put("auto.offset.reset", "earliest");
        withClientConfig(cp);
        List<String> seen = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            while (seen.size() < atLeast && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    String kv = r.key() + "=" + r.value();
                    if (keep.test(kv)) seen.add(kv);
                }
            }
        }
        return seen;
    }

    static StreamsGroupDescription describe(Admin admin, String groupId, boolean withTopology) throws Exception {
        return admin.describeStreamsGroups(List.of(groupId),
                new DescribeStreamsGroupsOptions().includeTopologyDescription(withTopology))
            .all().get(30, TimeUnit.SECONDS).get(groupId);
    }

    /** One line for the group, one per member with its tasks. */
    static void logDescription(String what, StreamsGroupDescription d) {
        log("%s: group=%s state=%s groupEpoch=%d targetEpoch=%d topologyEpoch=%d assignor=%s topologyStatus=%s topology=%s",
            what, d.groupId(), d.groupState(), d.groupEpoch(), d.targetAssignmentEpoch(), d.topologyEpoch(),
            d.assignorName().orElse("-"), d.topologyDescriptionStatus(),
            d.topologyDescription().map(Object::toString).orElse("<none>"));
        for (StreamsGroupMemberDescription m : d.members()) {
            log("%s:   member=%s epoch=%d topologyEpoch=%d client=%s assigned %s target %s", what, m.memberId(),
                m.memberEpoch(), m.topologyEpoch(), m.clientId(), tasks(m.assignment()), tasks(m.targetAssignment()));
        }
    }

    static String tasks(StreamsGroupMemberAssignment a) {
        return "active" + ids(a.activeTasks()) + " standby" + ids(a.standbyTasks()) + " warmup" + ids(a.warmupTasks());
    }

    private static String ids(List<StreamsGroupMemberAssignment.TaskIds> list) {
        return list.stream()
            .flatMap(t -> t.partitions().stream().map(p -> t.subtopologyId() + "_" + p))
            .sorted()
            .collect(Collectors.joining(",", "[", "]"));
    }

    /** Replaces the plugin's control file atomically (the broker re-reads it on every call). */
    static void writeControl(Path file, String content) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, content);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        log("plugin control file %s now: %s", file, content.isBlank() ? "<empty>" : content.strip().replace('\n', ' '));
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        try (var walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    static void log(String fmt, Object... args) {
        System.out.printf("[%s] %s%n", java.time.LocalTime.now().withNano(0), String.format(fmt, args));
        System.out.flush();
    }
}
