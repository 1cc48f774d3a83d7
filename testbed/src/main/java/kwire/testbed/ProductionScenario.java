package kwire.testbed;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Scenario "production": the workload of a production cluster, all of it at once, from
 * Kafka 4.4.0 clients in one JVM (each client with its own connections). Every client
 * uses the configs of -Dkwire.client.config (the scenario: SASL_SSL, SCRAM-SHA-512,
 * TLS 1.3); the transactional producer is forced to TLS 1.2 on top of them.
 *
 * <ol>
 *   <li>Admin creates orders, order-counts and payments (3 partitions each, replication
 *       factor 3) and sets share.auto.offset.reset=earliest on the share group (GROUP
 *       config), so it reads the orders written before it joins.</li>
 *   <li>Then three workloads at once:
 *     <ul>
 *       <li>Streams: the app prod-orders-app (group.protocol=streams,
 *           processing.guarantee=exactly_once_v2; orders -> filter amount > 0 -> count per
 *           customer in the store orders-per-customer, its changelog -> order-counts) runs
 *           as instance a; an idempotent producer writes 20 orders; instance b joins (two
 *           members with active tasks each), 10 more orders, b leaves, a alone again, a
 *           closes. A read_committed reader of order-counts (assign, no group) waits for
 *           one count update per valid order.</li>
 *       <li>Payments: a KIP-848 consumer (group prod-audit,
 *           isolation.level=read_committed, client.rack=RACK) subscribes to payments;
 *           the transactional producer prod-payments-txn (TLS 1.2) writes transaction 1
 *           (6 records, committed), 2 (3, aborted), 3 (6, committed); the consumer reads
 *           the 12 committed ones (never an aborted one), commits, and its fetch metrics
 *           must name a preferred read replica (KIP-392) for at least one partition: a
 *           follower in its rack that the leader sent it to.</li>
 *       <li>Share group: a KafkaShareConsumer (group prod-fulfilment, explicit
 *           acknowledgement) reads the 30 orders; it releases the first record it gets
 *           (delivered again, delivery count 2) and accepts every other delivery,
 *           committing the acknowledgements after each poll (ShareAcknowledge).</li>
 *     </ul></li>
 * </ol>
 *
 * <p>args: bootstrap state-dir=DIR [rack=r2]
 */
public final class ProductionScenario {
    static final String ORDERS = "orders";
    static final String COUNTS = "order-counts";
    static final String PAYMENTS = "payments";
    static final int PARTITIONS = 3;
    static final short REPLICAS = 3;
    static final String APP_ID = "prod-orders-app";
    static final String AUDIT_GROUP = "prod-audit";
    static final String SHARE_GROUP = "prod-fulfilment";
    static final String TXN_ID = "prod-payments-txn";
    static final int FIRST_ORDERS = 20;
    static final int MORE_ORDERS = 10;

    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        Path stateRoot = Files.createDirectories(Path.of(opt.get("state-dir")));
        String rack = opt.getOrDefault("rack", "r2");

        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-prod-admin"))) {
            List<NewTopic> topics = List.of(new NewTopic(ORDERS, PARTITIONS, REPLICAS),
                new NewTopic(COUNTS, PARTITIONS, REPLICAS), new NewTopic(PAYMENTS, PARTITIONS, REPLICAS));
            admin.createTopics(topics).all().get(30, TimeUnit.SECONDS);
            Common.log("created %s (%d partitions, RF %d each)", topics.stream().map(NewTopic::name).toList(),
                PARTITIONS, REPLICAS);
            ConfigResource share = new ConfigResource(ConfigResource.Type.GROUP, SHARE_GROUP);
            admin.incrementalAlterConfigs(Map.of(share, List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                .all().get(30, TimeUnit.SECONDS);
            Common.log("group %s: share.auto.offset.reset=earliest", SHARE_GROUP);

            ExecutorService pool = Executors.newFixedThreadPool(3);
            List<Future<?>> running = new ArrayList<>();
            running.add(pool.submit(logFailure(() -> streams(bootstrap, admin, stateRoot))));
            running.add(pool.submit(logFailure(() -> payments(bootstrap, rack))));
            running.add(pool.submit(logFailure(() -> shareWorkers(bootstrap, FIRST_ORDERS + MORE_ORDERS))));
            pool.shutdown();
            for (Future<?> f : running) f.get(300, TimeUnit.SECONDS);
        } finally {
            Common.deleteTree(stateRoot);
        }
        Common.log("production workload done");
    }

    /** Logs a workload's failure at once (the others may run on for a while). */
    private static Callable<Void> logFailure(Callable<Void> work) {
        return () -> {
            try {
                return work.call();
            } catch (Exception | Error e) {
                Common.log("FAILED: %s", e);
                throw e;
            }
        };
    }

    // --- Kafka Streams, exactly_once_v2 -------------------------------------------------

    static Topology topology() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(ORDERS, Consumed.with(Serdes.String(), Serdes.String()))
            .filter((customer, amount) -> Integer.parseInt(amount) > 0)
            .groupByKey()
            .count(Materialized.as("orders-per-customer"))
            .toStream()
            .mapValues(Object::toString)
            .to(COUNTS, Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    static String amount(int i) {
        return Integer.toString(i % 7 == 3 ? -5 : 10 + i);
    }

    static int validOrders(int from, int count) {
        int n = 0;
        for (int i = from; i < from + count; i++) if (Integer.parseInt(amount(i)) > 0) n++;
        return n;
    }

    private static Void streams(String bootstrap, Admin admin, Path stateRoot) throws Exception {
        Common.log("streams: topology%n%s", topology().describe());
        try (CountsReader counts = new CountsReader(bootstrap)) {
            KafkaStreams a = startStreams(bootstrap, stateRoot.resolve("a"), "prod-orders-app-a");
            try {
                Common.awaitState(a, KafkaStreams.State.RUNNING, 120);
                produceOrders(bootstrap, 0, FIRST_ORDERS);
                counts.await(validOrders(0, FIRST_ORDERS));
                KafkaStreams b = startStreams(bootstrap, stateRoot.resolve("b"), "prod-orders-app-b");
                try {
                    Common.awaitState(b, KafkaStreams.State.RUNNING, 120);
                    awaitMembers(admin, 2, 90);
                    produceOrders(bootstrap, FIRST_ORDERS, MORE_ORDERS);
                    counts.await(validOrders(0, FIRST_ORDERS + MORE_ORDERS));
                    Common.log("streams: closing instance b (it leaves the group)");
                    if (!b.close(Duration.ofSeconds(30))) throw new IllegalStateException("b did not close");
                } finally {
                    b.close(Duration.ofSeconds(5));
                }
                awaitMembers(admin, 1, 60);
                Common.log("streams: closing instance a");
                if (!a.close(Duration.ofSeconds(30))) throw new IllegalStateException("a did not close");
            } finally {
                a.close(Duration.ofSeconds(5));
            }
        }
        return null;
    }

    private static KafkaStreams startStreams(String bootstrap, Path stateDir, String clientId) throws Exception {
        Properties sp = Common.streamsProps(bootstrap, APP_ID, Files.createDirectories(stateDir));
        sp.put(StreamsConfig.CLIENT_ID_CONFIG, clientId);
        sp.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        // One count update per valid order (no record cache).
        sp.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        KafkaStreams s = new KafkaStreams(topology(), sp);
        s.setStateListener((now, before) -> Common.log("streams: %s state %s -> %s", clientId, before, now));
        s.start();
        Common.log("streams: %s started", clientId);
        return s;
    }

    /** Until the group is Stable with {@code members} members, each with active tasks, at the group epoch. */
    private static void awaitMembers(Admin admin, int members, int seconds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            StreamsGroupDescription d = Common.describe(admin, APP_ID, false);
            if (d.groupState() == GroupState.STABLE && d.members().size() == members
                    && d.members().stream().allMatch(m -> m.memberEpoch() == d.groupEpoch()
                        && !m.assignment().activeTasks().isEmpty())) {
                Common.logDescription("streams: describe (" + members + " member(s))", d);
                return;
            }
            if (System.nanoTime() > deadline) {
                Common.logDescription("streams: describe (not settled)", d);
                throw new IllegalStateException(APP_ID + " did not settle with " + members + " member(s) in " + seconds + " s");
            }
            Thread.sleep(1000);
        }
    }

    private static void produceOrders(String bootstrap, int from, int count) throws Exception {
        List<String[]> orders = new ArrayList<>();
        for (int i = from; i < from + count; i++) orders.add(new String[] {"customer-" + (i % 5), amount(i)});
        Common.produce(bootstrap, "kwire-prod-orders-producer", ORDERS, orders);
        Common.log("streams: produced orders %d..%d (%d valid)", from, from + count - 1, validOrders(from, count));
    }

    /** order-counts with read_committed, every partition assigned, read as it grows. */
    static final class CountsReader implements AutoCloseable {
        private final KafkaConsumer<String, String> consumer;
        private int seen;

        CountsReader(String bootstrap) {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("client.id", "kwire-prod-counts-reader");
            p.put("isolation.level", "read_committed");
            p.put("enable.auto.commit", "false");
            p.put("auto.offset.reset", "earliest");
            p.put("key.deserializer", StringDeserializer.class.getName());
            p.put("value.deserializer", StringDeserializer.class.getName());
            consumer = new KafkaConsumer<>(Common.withClientConfig(p));
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) tps.add(new TopicPartition(COUNTS, i));
            consumer.assign(tps);
        }

        void await(int n) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (seen < n) {
                if (System.nanoTime() > deadline) throw new IllegalStateException(COUNTS + ": " + seen + " of " + n + " updates");
                seen += consumer.poll(Duration.ofMillis(500)).count();
            }
            Common.log("streams: %s holds %d committed count updates (waited for %d)", COUNTS, seen, n);
        }

        @Override
        public void close() {
            consumer.close(Duration.ofSeconds(10));
        }
    }

    // --- transactions and a read_committed consumer that fetches from its rack ----------

    private static Void payments(String bootstrap, String rack) throws Exception {
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("client.id", "kwire-prod-payments-audit");
        cp.put("group.id", AUDIT_GROUP);
        cp.put("group.protocol", "consumer");
        cp.put("isolation.level", "read_committed");
        cp.put("client.rack", rack);
        cp.put("enable.auto.commit", "false");
        cp.put("auto.offset.reset", "earliest");
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        Common.withClientConfig(cp);

        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("client.id", "kwire-prod-payments-producer");
        pp.put("transactional.id", TXN_ID);
        pp.put("linger.ms", "5");
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        Common.withClientConfig(pp);
        // This client alone on TLS 1.2 (JSSE's default suite order: ECDHE-RSA AES-256-GCM).
        pp.put("ssl.protocol", "TLSv1.2");
        pp.put("ssl.enabled.protocols", "TLSv1.2");

        int read = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            consumer.subscribe(List.of(PAYMENTS));
            // Polls until the consumer has its partitions, before anything is written.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (consumer.assignment().size() < PARTITIONS) {
                if (System.nanoTime() > deadline) throw new IllegalStateException(AUDIT_GROUP + ": no assignment in 90 s");
                if (!consumer.poll(Duration.ofMillis(500)).isEmpty()) throw new IllegalStateException("records before any were written");
            }
            Common.log("payments: consumer (group %s, client.rack %s) owns %s", AUDIT_GROUP, rack, consumer.assignment());
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
                producer.initTransactions();
                int[][] txns = {{1, 6, 1}, {2, 3, 0}, {3, 6, 1}};   // number, records, commit
                int expected = 0;
                for (int[] t : txns) {
                    producer.beginTransaction();
                    List<Future<?>> sent = new ArrayList<>();
                    for (int j = 0; j < t[1]; j++) {
                        sent.add(producer.send(new ProducerRecord<>(PAYMENTS, j % PARTITIONS, "p" + t[0] + "-" + j,
                            "payment " + t[0] + "/" + j + (t[2] == 1 ? "" : "/aborted"))));
                    }
                    for (Future<?> f : sent) f.get(30, TimeUnit.SECONDS);
                    if (t[2] == 1) {
                        producer.commitTransaction();
                        expected += t[1];
                    } else {
                        producer.abortTransaction();
                    }
                    Common.log("payments: transaction %d (%d records) %s", t[0], t[1], t[2] == 1 ? "committed" : "aborted");
                    // The consumer reads while the next transaction is written.
                    read += poll(consumer, 1);
                }
                deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (read < expected) {
                    if (System.nanoTime() > deadline) throw new IllegalStateException("payments: " + read + " of " + expected + " records");
                    read += poll(consumer, 1);
                }
                if (read != expected) throw new IllegalStateException("payments: " + read + " records, expected " + expected);
                consumer.commitSync(Duration.ofSeconds(30));
                Common.log("payments: read the %d committed records (read_committed), offsets committed", read);
            }
            Map<Integer, Integer> preferred = preferredReadReplicas(consumer);
            Map<Integer, String> leaders = new TreeMap<>();
            for (PartitionInfo p : consumer.partitionsFor(PAYMENTS)) {
                leaders.put(p.partition(), p.leader().id() + (p.leader().hasRack() ? "/" + p.leader().rack() : "")
                    + " replicas " + java.util.Arrays.stream(p.replicas()).map(n -> n.id() + "/" + n.rack()).toList());
            }
            Common.log("payments: leaders %s; preferred read replica per partition (consumer metric) %s", leaders, preferred);
            if (preferred.values().stream().noneMatch(id -> id >= 0)) {
                throw new IllegalStateException("payments: no partition has a preferred read replica: " + preferred);
            }
            Common.log("payments: consumer leaves the group");
        }
        return null;
    }

    /** One poll; fails on an aborted record. Returns the number of records. */
    private static int poll(KafkaConsumer<String, String> consumer, int times) {
        int n = 0;
        for (int i = 0; i < times; i++) {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                if (r.value().endsWith("/aborted")) throw new IllegalStateException("read_committed consumer got " + r);
                n++;
            }
        }
        return n;
    }

    /** The consumer's preferred-read-replica metric (consumer-fetch-manager-metrics) of each partition. */
    private static Map<Integer, Integer> preferredReadReplicas(KafkaConsumer<String, String> consumer) {
        Map<Integer, Integer> out = new TreeMap<>();
        for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
            MetricName n = e.getKey();
            if (n.name().equals("preferred-read-replica") && PAYMENTS.equals(n.tags().get("topic"))) {
                out.put(Integer.parseInt(n.tags().get("partition")), ((Number) e.getValue().metricValue()).intValue());
            }
        }
        return out;
    }

    // --- share group ----------------------------------------------------------------------

    private static Void shareWorkers(String bootstrap, int expected) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "kwire-prod-share-worker");
        p.put("group.id", SHARE_GROUP);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        Common.withClientConfig(p);
        Set<String> accepted = new TreeSet<>();
        String released = null;
        int redelivered = 0;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
            consumer.subscribe(List.of(ORDERS));
            Common.log("share: consumer subscribed to %s in share group %s", ORDERS, SHARE_GROUP);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
            while (accepted.size() < expected) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("share: " + accepted.size() + " of " + expected + " records accepted");
                }
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : records) {
                    String id = r.partition() + "@" + r.offset();
                    short deliveries = r.deliveryCount().orElse((short) 1);
                    if (released == null) {
                        consumer.acknowledge(r, AcknowledgeType.RELEASE);
                        released = id;
                        Common.log("share: released %s (%s=%s, delivery %d)", id, r.key(), r.value(), deliveries);
                        continue;
                    }
                    if (deliveries > 1) {
                        redelivered++;
                        Common.log("share: %s delivered again (delivery %d)", id, deliveries);
                    }
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    accepted.add(id);
                }
                if (!records.isEmpty()) consumer.commitSync(Duration.ofSeconds(30));
            }
            Common.log("share: accepted %d records (%d delivered more than once); leaving", accepted.size(), redelivered);
        }
        if (released == null || !accepted.contains(released) || redelivered < 1) {
            throw new IllegalStateException("share: the released record " + released + " did not come back");
        }
        return null;
    }
}
