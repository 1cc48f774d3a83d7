package kwire.testbed;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Scenario "txn-consumer": transactions on both sides of a consume-transform-produce
 * loop, with Kafka 4.4.0 clients. The topics (txn-in and txn-out, 3 partitions each,
 * retention.ms=-1) are created before this runs.
 *
 * <ol>
 *   <li>Source: a transactional producer (transactional.id txn-source) writes round 1
 *       to txn-in: transaction 1 (6 records) committed, transaction 2 (3 records)
 *       aborted.</li>
 *   <li>App: a KIP-848 consumer (group.protocol=consumer, group txn-app,
 *       isolation.level=read_committed, no auto commit) subscribes to txn-in and joins
 *       the group alone (all three partitions); a second transactional producer
 *       (txn-app-processor) is its output. The app polls until it has the 6 committed
 *       records of round 1, then in one transaction writes each, transformed, to the same
 *       partition of txn-out and commits the consumed offsets with
 *       sendOffsetsToTransaction (the consumer's group metadata: member id and member
 *       epoch), and commits.</li>
 *   <li>App: keeps polling for {@code idle} seconds with nothing new to read, so the
 *       capture holds periodic ConsumerGroupHeartbeats and empty incremental fetches
 *       (long polls of fetch.max.wait.ms, 500 ms).</li>
 *   <li>Source round 2: transaction 3 (6) committed, 4 (3) aborted, 5 (6) committed.</li>
 *   <li>App: polls until it has the 12 committed records of round 2 (never an aborted
 *       one), one more transaction as above; then the consumer closes (leaves the
 *       group) and both producers close.</li>
 *   <li>txn-out is read back with read_committed (no group): the 18 records the app
 *       wrote, and nothing else.</li>
 * </ol>
 *
 * <p>Everything is fixed: keys, values, partitions (record j of a transaction goes to
 * partition j % 3) and timestamps (2025-01-01T00:00:00Z + 60 s per transaction + 1 s
 * per record; the app keeps the input timestamp), so per partition txn-in ends with
 * offsets: 0-1 txn 1, 2 commit marker, 3 txn 2, 4 abort marker, 5-6 txn 3, 7 marker,
 * 8 txn 4, 9 abort marker, 10-11 txn 5, 12 marker; the group's committed offset is 2
 * after round 1 and 12 after round 2 (last consumed record + 1).
 *
 * <p>With transaction.version=2 (the default of a freshly formatted 4.4.0 cluster) a
 * 4.4.0 producer sends no AddPartitionsToTxn and no AddOffsetsToTxn: the scenario script
 * formats the broker with transaction.version=1, the KIP-98 flow with both.
 *
 * <p>args: bootstrap [group=txn-app] [idle=8]
 */
public final class TxnConsumerScenario {
    static final String IN = "txn-in";
    static final String OUT = "txn-out";
    static final int PARTITIONS = 3;
    static final String SOURCE_TXN_ID = "txn-source";
    static final String APP_TXN_ID = "txn-app-processor";
    /** 2025-01-01T00:00:00Z. */
    static final long BASE_TIMESTAMP = 1735689600000L;

    /** One source transaction: its number, how many records, commit or abort. */
    record SourceTxn(int number, int records, boolean commit) { }

    static final List<SourceTxn> ROUND_1 = List.of(new SourceTxn(1, 6, true), new SourceTxn(2, 3, false));
    static final List<SourceTxn> ROUND_2 =
        List.of(new SourceTxn(3, 6, true), new SourceTxn(4, 3, false), new SourceTxn(5, 6, true));

    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        String group = opt.getOrDefault("group", "txn-app");
        int idleSeconds = Integer.parseInt(opt.getOrDefault("idle", "8"));

        try (KafkaProducer<String, String> source =
                 new KafkaProducer<>(transactionalProps(bootstrap, "kwire-txn-source", SOURCE_TXN_ID))) {
            source.initTransactions();
            Common.log("source producer %s initialized", SOURCE_TXN_ID);
            writeRound(source, ROUND_1);

            List<String> processed = new ArrayList<>();
            try (KafkaProducer<String, String> app =
                     new KafkaProducer<>(transactionalProps(bootstrap, "kwire-txn-app-producer", APP_TXN_ID));
                 KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(bootstrap, group))) {
                app.initTransactions();
                consumer.subscribe(List.of(IN));
                Common.log("app: consumer subscribed to %s in group %s; producer %s initialized", IN, group, APP_TXN_ID);

                processed.addAll(processRound(consumer, app, committedRecords(ROUND_1), 1));
                idle(consumer, idleSeconds);
                writeRound(source, ROUND_2);
                processed.addAll(processRound(consumer, app, committedRecords(ROUND_2), 2));

                Common.log("app: closing the consumer (leaves the group)");
                consumer.close(Duration.ofSeconds(30));
            }
            Common.log("app: closed");

            List<String> out = readCommitted(bootstrap, processed.size());
            List<String> want = new ArrayList<>(processed);
            want.sort(Comparator.naturalOrder());
            out.sort(Comparator.naturalOrder());
            if (!out.equals(want)) {
                throw new IllegalStateException("txn-out holds " + out + ", expected " + want);
            }
            Common.log("txn-out (read_committed) holds the %d records the app wrote", out.size());
        }
    }

    static Properties transactionalProps(String bootstrap, String clientId, String transactionalId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId);
        p.put("transactional.id", transactionalId);
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return p;
    }

    static Properties consumerProps(String bootstrap, String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "kwire-txn-app-consumer");
        p.put("group.id", group);
        p.put("group.protocol", "consumer");
        p.put("isolation.level", "read_committed");
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return p;
    }

    static String key(int txn, int index) {
        return "t" + txn + "-" + index;
    }

    static String value(SourceTxn t, int index) {
        return "txn" + t.number() + "/record" + index + (t.commit() ? "" : "/aborted");
    }

    static long timestamp(int txn, int index) {
        return BASE_TIMESTAMP + txn * 60_000L + index * 1_000L;
    }

    /** The transactions one after the other, each committed or aborted before the next begins. */
    static void writeRound(KafkaProducer<String, String> source, List<SourceTxn> round) throws Exception {
        for (SourceTxn t : round) {
            source.beginTransaction();
            List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
            for (int j = 0; j < t.records(); j++) {
                sent.add(source.send(new ProducerRecord<>(IN, j % PARTITIONS, timestamp(t.number(), j),
                    key(t.number(), j), value(t, j))));
            }
            // Every record is acknowledged before the transaction ends.
            for (var f : sent) f.get(30, TimeUnit.SECONDS);
            if (t.commit()) source.commitTransaction();
            else source.abortTransaction();
            Common.log("source: transaction %d (%d records) %s", t.number(), t.records(),
                t.commit() ? "committed" : "aborted");
        }
    }

    static int committedRecords(List<SourceTxn> round) {
        return round.stream().filter(SourceTxn::commit).mapToInt(SourceTxn::records).sum();
    }

    /**
     * Polls until exactly {@code expected} records came in, then writes them transformed to
     * txn-out and commits their offsets, all in one transaction. Returns the "key=value"
     * strings written.
     */
    static List<String> processRound(KafkaConsumer<String, String> consumer, KafkaProducer<String, String> app,
                                     int expected, int round) throws Exception {
        List<ConsumerRecord<String, String>> batch = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (batch.size() < expected) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("round " + round + ": " + batch.size() + " of " + expected + " records in 60 s");
            }
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) batch.add(r);
        }
        if (batch.size() != expected) {
            throw new IllegalStateException("round " + round + ": " + batch.size() + " records, expected " + expected);
        }
        for (ConsumerRecord<String, String> r : batch) {
            if (r.value().endsWith("/aborted")) {
                throw new IllegalStateException("read_committed consumer got an aborted record: " + r);
            }
        }
        batch.sort(Comparator.<ConsumerRecord<String, String>>comparingInt(ConsumerRecord::partition)
            .thenComparingLong(ConsumerRecord::offset));

        ConsumerGroupMetadata meta = consumer.groupMetadata();
        Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
        List<String> written = new ArrayList<>();
        app.beginTransaction();
        List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
        for (ConsumerRecord<String, String> r : batch) {
            String v = "processed " + r.value();
            sent.add(app.send(new ProducerRecord<>(OUT, r.partition(), r.timestamp(), r.key(), v)));
            written.add(r.key() + "=" + v);
            offsets.put(new TopicPartition(r.topic(), r.partition()),
                new OffsetAndMetadata(r.offset() + 1, r.leaderEpoch(), ""));
        }
        for (var f : sent) f.get(30, TimeUnit.SECONDS);
        app.sendOffsetsToTransaction(offsets, meta);
        app.commitTransaction();
        Common.log("app: round %d: %d records -> %s, offsets %s committed in a transaction (member %s, epoch %d)",
            round, batch.size(), OUT, offsets, meta.memberId(), meta.generationId());
        return written;
    }

    /** Polls for the given time; nothing may come in (the source is between rounds). */
    static void idle(KafkaConsumer<String, String> consumer, int seconds) {
        Common.log("app: polling %d s with nothing to read", seconds);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < until) {
            var records = consumer.poll(Duration.ofMillis(500));
            if (!records.isEmpty()) throw new IllegalStateException("unexpected records while idle: " + records.count());
        }
    }

    /** txn-out from the beginning with read_committed, without a group. */
    static List<String> readCommitted(String bootstrap, int expected) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "kwire-txn-out-reader");
        p.put("isolation.level", "read_committed");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        List<String> seen = new ArrayList<>();
        try (KafkaConsumer<String, String> reader = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) tps.add(new TopicPartition(OUT, i));
            reader.assign(tps);
            reader.seekToBeginning(tps);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (seen.size() < expected && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : reader.poll(Duration.ofMillis(500))) {
                    seen.add(r.key() + "=" + r.value());
                }
            }
        }
        return seen;
    }
}
