package kwire.testbed;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Scenario "aged-records": records whose CreateTime is 30 days before they are sent,
 * older than a broker's default retention (7 days), as every capture's records are a
 * week after it was made. The topic (aged, 2 partitions) is created with no configs,
 * under the broker's default retention (7 days); the recording broker runs its first
 * retention pass an hour after it starts (log.initial.task.delay.ms), so the records
 * live through the recording.
 *
 * <ol>
 *   <li>An idempotent producer (acks=all) writes record i (key k&lt;i&gt;) to partition
 *       i % 2 with timestamp T + i s, T = the scenario's start minus 30 days: records
 *       0-9, then, after the consumer has read and committed them and polled
 *       {@code idle} seconds with nothing new (long-polled Fetches, heartbeats), records
 *       10-19.</li>
 *   <li>A KIP-848 consumer (group aged-app) reads each round from the earliest offset,
 *       checks each record's partition, offset (i / 2) and timestamp, and commits; then
 *       asks offsetsForTimes(T + 5 s) on each partition (ListOffsets by time):
 *       partition 0 answers offset 3 (record 6, T + 6 s), partition 1 offset 2 (record
 *       5, T + 5 s). It leaves the group.</li>
 *   <li>Admin lists the earliest, latest and max-timestamp offsets of both partitions:
 *       0, 10 and 9 (records 18 and 19).</li>
 * </ol>
 *
 * <p>args: bootstrap [idle=8]
 */
public final class AgedRecordsScenario {
    static final String TOPIC = "aged";
    static final String GROUP = "aged-app";
    static final int RECORDS = 20;
    static final long AGE_MS = 30L * 24 * 3600 * 1000;

    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        int idleSeconds = Integer.parseInt(Common.options(args).getOrDefault("idle", "8"));
        final long base = System.currentTimeMillis() - AGE_MS;
        Common.log("records dated from %s (30 days back)", java.time.Instant.ofEpochMilli(base));

        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("client.id", "kwire-aged-producer");
        pp.put("acks", "all");
        pp.put("enable.idempotence", "true");
        pp.put("linger.ms", "5");
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());

        TopicPartition p0 = new TopicPartition(TOPIC, 0), p1 = new TopicPartition(TOPIC, 1);
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("client.id", "kwire-aged-consumer");
        cp.put("group.id", GROUP);
        cp.put("group.protocol", "consumer");
        cp.put("enable.auto.commit", "false");
        cp.put("auto.offset.reset", "earliest");
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Common.withClientConfig(pp));
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Common.withClientConfig(cp))) {
            consumer.subscribe(List.of(TOPIC));
            for (int round = 0; round < 2; round++) {
                int from = round * RECORDS / 2, to = from + RECORDS / 2;
                List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
                for (int i = from; i < to; i++) {
                    sent.add(producer.send(new ProducerRecord<>(TOPIC, i % 2, base + i * 1000L, "k" + i, "aged-" + i)));
                }
                for (var f : sent) f.get(30, TimeUnit.SECONDS);
                Common.log("round %d: produced records %d-%d", round + 1, from, to - 1);
                int seen = 0;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (seen < to - from) {
                    if (System.nanoTime() > deadline) throw new IllegalStateException("read " + seen + " of " + (to - from));
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                        int i = Integer.parseInt(r.key().substring(1));
                        if (i < from || i >= to || r.timestamp() != base + i * 1000L || r.partition() != i % 2
                                || r.offset() != i / 2) {
                            throw new IllegalStateException("record " + r + " is not record " + i + " as written");
                        }
                        seen++;
                    }
                }
                consumer.commitSync();
                Common.log("round %d: consumer %s read and committed %d records", round + 1, GROUP, seen);
                if (round == 0) {
                    long idleUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(idleSeconds);
                    while (System.nanoTime() < idleUntil) {
                        if (!consumer.poll(Duration.ofMillis(500)).isEmpty()) throw new IllegalStateException("a record while idle");
                    }
                }
            }
            Map<TopicPartition, OffsetAndTimestamp> at = consumer.offsetsForTimes(Map.of(p0, base + 5000, p1, base + 5000));
            expect("offsetsForTimes partition 0", at.get(p0).offset(), 3);
            expect("offsetsForTimes partition 1", at.get(p1).offset(), 2);
            expect("offsetsForTimes partition 0 timestamp", at.get(p0).timestamp(), base + 6000);
            consumer.close(Duration.ofSeconds(30));
        }

        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-aged-admin"))) {
            for (var spec : List.of(OffsetSpec.earliest(), OffsetSpec.latest(), OffsetSpec.maxTimestamp())) {
                ListOffsetsResult r = admin.listOffsets(Map.of(p0, spec, p1, spec));
                long o0 = r.partitionResult(p0).get(30, TimeUnit.SECONDS).offset();
                long o1 = r.partitionResult(p1).get(30, TimeUnit.SECONDS).offset();
                long want = spec instanceof OffsetSpec.EarliestSpec ? 0 : spec instanceof OffsetSpec.LatestSpec ? 10 : 9;
                expect(spec.getClass().getSimpleName() + " partition 0", o0, want);
                expect(spec.getClass().getSimpleName() + " partition 1", o1, want);
            }
        }
        Common.log("list offsets: earliest 0, latest 10, max timestamp 9 on both partitions");
    }

    static void expect(String what, long got, long want) {
        if (got != want) throw new IllegalStateException(what + ": " + got + ", expected " + want);
        Common.log("%s: %d", what, got);
    }
}
