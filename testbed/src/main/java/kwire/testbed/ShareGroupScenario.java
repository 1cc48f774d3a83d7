package kwire.testbed;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Scenario "share-group": two members of one share group (KIP-932) take records of the
 * same partition (a share group's assignor gives a partition to several members when
 * the group has more members than partitions), so which member acquires which record
 * is a matter of timing.
 *
 * <ol>
 *   <li>Admin sets share.auto.offset.reset=earliest on group share-app.</li>
 *   <li>An idempotent producer writes record i (key k&lt;i&gt;) to share-in (one
 *       partition): records 0-29, then, once the members have accepted those, 30-59.</li>
 *   <li>Member a (client id kwire-share-a, explicit acknowledgement) releases the first
 *       record it gets, accepts every other one, and commits after each poll
 *       (ShareAcknowledge); member b (kwire-share-b, implicit acknowledgement: the
 *       next ShareFetch carries the acknowledgements) joins a second later. The
 *       records are written one at a time once both are assigned the partition. Both
 *       poll until every record is accepted by one of them, then leave.</li>
 *   <li>Admin describes the group (Empty) and lists its share-partition offsets: no lag
 *       on share-in.</li>
 * </ol>
 *
 * <p>args: bootstrap
 */
public final class ShareGroupScenario {
    static final String TOPIC = "share-in";
    static final String GROUP = "share-app";
    static final int PARTITIONS = 1;
    static final int RECORDS = 60;

    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-share-admin"))) {
            ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, GROUP);
            admin.incrementalAlterConfigs(Map.of(group, List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                .all().get(30, TimeUnit.SECONDS);
            Common.log("group %s: share.auto.offset.reset=earliest", GROUP);
        }

        Map<String, String> accepted = new ConcurrentHashMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        Future<?> a = pool.submit(() -> member(bootstrap, "kwire-share-a", true, accepted));
        Thread.sleep(1000);
        Future<?> b = pool.submit(() -> member(bootstrap, "kwire-share-b", false, accepted));
        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-share-admin"))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                ShareGroupDescription d = admin.describeShareGroups(List.of(GROUP)).all().get(30, TimeUnit.SECONDS).get(GROUP);
                if (d.members().size() == 2 && d.members().stream().allMatch(m -> !m.assignment().topicPartitions().isEmpty())) {
                    Common.log("group %s: both members assigned share-in", GROUP);
                    break;
                }
                if (System.nanoTime() > deadline) throw new IllegalStateException("group " + GROUP + ": " + d);
                Thread.sleep(200);
            }
        }

        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("client.id", "kwire-share-producer");
        pp.put("acks", "all");
        pp.put("enable.idempotence", "true");
        pp.put("linger.ms", "5");
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Common.withClientConfig(pp))) {
            for (int round = 0; round < 2; round++) {
                for (int i = round * RECORDS / 2; i < (round + 1) * RECORDS / 2; i++) {
                    // One at a time, so that both members' ShareFetches find records.
                    producer.send(new ProducerRecord<>(TOPIC, i % PARTITIONS, "k" + i, "record " + i)).get(30, TimeUnit.SECONDS);
                    Thread.sleep(40);
                }
                Common.log("produced records %d-%d", round * RECORDS / 2, (round + 1) * RECORDS / 2 - 1);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                while (accepted.size() < (round + 1) * RECORDS / 2) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("only " + accepted.size() + " records accepted");
                    }
                    Thread.sleep(100);
                }
            }
        }
        a.get(180, TimeUnit.SECONDS);
        b.get(180, TimeUnit.SECONDS);
        pool.shutdown();
        long byA = accepted.values().stream().filter("kwire-share-a"::equals).count();
        Common.log("accepted %d records: %d by a, %d by b", accepted.size(), byA, accepted.size() - byA);

        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-share-admin"))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) {
                ShareGroupDescription d = admin.describeShareGroups(List.of(GROUP)).all().get(30, TimeUnit.SECONDS).get(GROUP);
                Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin
                    .listShareGroupOffsets(Map.of(GROUP, new ListShareGroupOffsetsSpec()))
                    .partitionsToOffsetInfo(GROUP).get(30, TimeUnit.SECONDS);
                boolean done = d.groupState() == GroupState.EMPTY && offsets.size() == PARTITIONS
                    && offsets.values().stream().allMatch(o -> o != null && o.lag().orElse(-1L) == 0L);
                if (done) {
                    Common.log("group %s: %s, start offsets %s", GROUP, d.groupState(), offsets);
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("group " + GROUP + ": " + d.groupState() + ", start offsets " + offsets);
                }
                Thread.sleep(500);
            }
        }
    }

    private static Void member(String bootstrap, String clientId, boolean explicit, Map<String, String> accepted) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId);
        p.put("group.id", GROUP);
        p.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        Common.withClientConfig(p);
        boolean released = !explicit;
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
            consumer.subscribe(List.of(TOPIC));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(150);
            while (accepted.size() < RECORDS) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(clientId + ": " + accepted.size() + " of " + RECORDS + " accepted");
                }
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(300));
                for (ConsumerRecord<String, String> r : records) {
                    String id = r.partition() + "@" + r.offset();
                    if (!released) {
                        consumer.acknowledge(r, AcknowledgeType.RELEASE);
                        released = true;
                        Common.log("%s: released %s", clientId, id);
                        continue;
                    }
                    if (explicit) consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    String before = accepted.putIfAbsent(id, clientId);
                    if (before != null) {
                        throw new IllegalStateException(id + " accepted by " + before + " and " + clientId);
                    }
                }
                if (explicit && !records.isEmpty()) consumer.commitSync(Duration.ofSeconds(30));
            }
            // Implicit acknowledgement: the records of the last poll are acknowledged by
            // the next ShareFetch, which never comes, so commit them before leaving.
            if (!explicit) consumer.commitSync(Duration.ofSeconds(30));
            Common.log("%s: leaving", clientId);
        }
        return null;
    }
}
