package kwire.testbed;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Scenario "classic-consumer": a classic consumer group (group.protocol=classic,
 * JoinGroup / SyncGroup / Heartbeat / LeaveGroup) of two members with the
 * CooperativeStickyAssignor and client.rack set, Kafka 4.4.0 clients. The topic
 * (classic-in, 4 partitions) is created before this runs.
 *
 * <ol>
 *   <li>Round 1: a producer writes 8 records, 2 to each partition.</li>
 *   <li>Member a (client id kwire-classic-a, rack rack-a) subscribes and joins alone:
 *       JoinGroup (MEMBER_ID_REQUIRED, then again with its member id), it is the leader
 *       and assigns itself all 4 partitions (SyncGroup); it reads the 8 records and
 *       commits offset 2 on each partition (OffsetCommit).</li>
 *   <li>Member b (kwire-classic-b, rack-b) subscribes and joins: a learns of the
 *       rebalance from its heartbeat and rejoins with its 4 partitions as
 *       OwnedPartitions; the cooperative assignor takes 2 of them from a and gives b
 *       nothing yet; a revokes them and rejoins at once (a second rebalance), and b
 *       gets the 2 partitions a gave up. Both members poll in turn from one thread.</li>
 *   <li>Round 2: 8 more records, 2 per partition; each member reads those of its own
 *       partitions and commits offset 4 on them.</li>
 *   <li>Admin describes the group while both members are in it (classic members:
 *       their subscription and assignment).</li>
 *   <li>b closes (LeaveGroup); a rejoins and gets the other 2 partitions back (its own
 *       2 as OwnedPartitions); then a closes (LeaveGroup) and the group is Empty.</li>
 * </ol>
 *
 * <p>Records are fixed: record j of round r has key {@code r<r>-<j>}, value
 * {@code round<r>/record<j>}, partition j % 4, timestamp 2025-01-01T00:00:00Z + r min
 * + j s. Which two partitions move to b is the assignor's choice.
 *
 * <p>args: bootstrap [group=classic-app] [topic=classic-in]
 */
public final class ClassicConsumerScenario {
    static final int PARTITIONS = 4;
    static final int RECORDS_PER_ROUND = 8;
    /** 2025-01-01T00:00:00Z. */
    static final long BASE_TIMESTAMP = 1735689600000L;
    static final Duration POLL = Duration.ofMillis(200);

    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        String group = opt.getOrDefault("group", "classic-app");
        String topic = opt.getOrDefault("topic", "classic-in");

        produceRound(bootstrap, topic, 1);

        try (KafkaConsumer<String, String> a = new KafkaConsumer<>(consumerProps(bootstrap, group, "kwire-classic-a", "rack-a"));
             KafkaConsumer<String, String> b = new KafkaConsumer<>(consumerProps(bootstrap, group, "kwire-classic-b", "rack-b"))) {
            Map<String, List<ConsumerRecord<String, String>>> got = new LinkedHashMap<>();
            got.put("a", new ArrayList<>());
            got.put("b", new ArrayList<>());

            a.subscribe(List.of(topic), listener("a"));
            Common.log("a: subscribed to %s in group %s", topic, group);
            pollUntil("a owns all partitions and read round 1", 60, () -> {
                poll(a, "a", got);
                return a.assignment().size() == PARTITIONS && got.get("a").size() == RECORDS_PER_ROUND;
            });
            commit(a, "a", got.get("a"));

            b.subscribe(List.of(topic), listener("b"));
            Common.log("b: subscribed; the group rebalances (cooperative: two rounds)");
            pollUntil("a and b own 2 partitions each", 60, () -> {
                poll(a, "a", got);
                poll(b, "b", got);
                return a.assignment().size() == PARTITIONS / 2 && b.assignment().size() == PARTITIONS / 2;
            });
            Common.log("a owns %s, b owns %s", names(a.assignment()), names(b.assignment()));

            got.get("a").clear();
            got.get("b").clear();
            produceRound(bootstrap, topic, 2);
            pollUntil("a and b read round 2", 60, () -> {
                poll(a, "a", got);
                poll(b, "b", got);
                return got.get("a").size() + got.get("b").size() == RECORDS_PER_ROUND;
            });
            if (got.get("a").size() != RECORDS_PER_ROUND / 2 || got.get("b").size() != RECORDS_PER_ROUND / 2) {
                throw new IllegalStateException("round 2: a read " + got.get("a").size() + ", b read " + got.get("b").size());
            }
            commit(a, "a", got.get("a"));
            commit(b, "b", got.get("b"));

            describe(bootstrap, group);

            Common.log("b: closing (LeaveGroup)");
            b.close(Duration.ofSeconds(30));
            pollUntil("a owns all partitions again", 60, () -> {
                poll(a, "a", got);
                return a.assignment().size() == PARTITIONS;
            });
            Common.log("a owns %s", names(a.assignment()));
            Common.log("a: closing (LeaveGroup)");
            a.close(Duration.ofSeconds(30));
        }
        Common.log("both members left");
    }

    static Properties consumerProps(String bootstrap, String group, String clientId, String rack) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId);
        p.put("client.rack", rack);
        p.put("group.id", group);
        p.put("group.protocol", "classic");
        p.put("partition.assignment.strategy", CooperativeStickyAssignor.class.getName());
        p.put("heartbeat.interval.ms", "1000");
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return p;
    }

    static void produceRound(String bootstrap, String topic, int round) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "kwire-classic-producer");
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
            for (int j = 0; j < RECORDS_PER_ROUND; j++) {
                sent.add(producer.send(new ProducerRecord<>(topic, j % PARTITIONS,
                    BASE_TIMESTAMP + round * 60_000L + j * 1_000L, "r" + round + "-" + j, "round" + round + "/record" + j)));
            }
            for (var f : sent) f.get(30, TimeUnit.SECONDS);
        }
        Common.log("producer: round %d, %d records to %s (%d per partition)", round, RECORDS_PER_ROUND, topic,
            RECORDS_PER_ROUND / PARTITIONS);
    }

    static ConsumerRebalanceListener listener(String name) {
        return new ConsumerRebalanceListener() {
            @Override public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                if (!partitions.isEmpty()) Common.log("%s: revoked %s", name, names(partitions));
            }
            @Override public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                Common.log("%s: assigned %s", name, names(partitions));
            }
            @Override public void onPartitionsLost(Collection<TopicPartition> partitions) {
                Common.log("%s: lost %s", name, names(partitions));
            }
        };
    }

    static void poll(KafkaConsumer<String, String> c, String name, Map<String, List<ConsumerRecord<String, String>>> got) {
        for (ConsumerRecord<String, String> r : c.poll(POLL)) got.get(name).add(r);
    }

    static void pollUntil(String what, int seconds, BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("not within " + seconds + " s: " + what);
        }
        Common.log("%s", what);
    }

    /** Commits, for each partition read, the offset after the last record read. */
    static void commit(KafkaConsumer<String, String> c, String name, List<ConsumerRecord<String, String>> records) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
        records.stream()
            .sorted(Comparator.<ConsumerRecord<String, String>>comparingInt(ConsumerRecord::partition)
                .thenComparingLong(ConsumerRecord::offset))
            .forEach(r -> offsets.put(new TopicPartition(r.topic(), r.partition()),
                new OffsetAndMetadata(r.offset() + 1, r.leaderEpoch(), "")));
        c.commitSync(offsets, Duration.ofSeconds(30));
        Common.log("%s: committed %s (generation %d, member %s)", name, offsets, c.groupMetadata().generationId(),
            c.groupMetadata().memberId());
    }

    static void describe(String bootstrap, String group) throws Exception {
        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-classic-describe"))) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                .get(30, TimeUnit.SECONDS).get(group);
            Common.log("describe: group=%s type=%s state=%s assignor=%s", d.groupId(), d.type(), d.groupState(),
                d.partitionAssignor());
            List<MemberDescription> members = new ArrayList<>(d.members());
            members.sort(Comparator.comparing(MemberDescription::clientId));
            for (MemberDescription m : members) {
                Common.log("describe:   member=%s client=%s assigned %s", m.consumerId(), m.clientId(),
                    names(m.assignment().topicPartitions()));
            }
            if (members.size() != 2) throw new IllegalStateException("describe: " + members.size() + " members, expected 2");
        }
    }

    static String names(Collection<TopicPartition> tps) {
        TreeSet<String> s = new TreeSet<>();
        for (TopicPartition tp : tps) s.add(tp.topic() + "-" + tp.partition());
        return s.toString();
    }
}
