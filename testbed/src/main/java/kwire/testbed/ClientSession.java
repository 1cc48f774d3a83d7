package kwire.testbed;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A short client session, meant to run over a TLS / SASL_SSL listener with the extra client
 * configs of -Dkwire.client.config (see {@link Common#clientConfig()}): optionally an Admin
 * (describeCluster, listTopics, createTopics of a missing topic), a producer, and a
 * consumer in a KIP-848 group (group.protocol=consumer) that reads this session's records
 * from the beginning, commits and leaves.
 *
 * <p>args: bootstrap [key=value ...]
 * <ul>
 *   <li>client-id (kwire-session): prefix of the client ids (-admin, -producer, -consumer);
 *       the values of the records written are "&lt;client-id&gt;/record&lt;i&gt;";</li>
 *   <li>admin (true): describeCluster and listTopics first;</li>
 *   <li>topic: the topic produced to and consumed from;</li>
 *   <li>create-topic (false): create the topic (partitions, default 1) if listTopics lacks it;</li>
 *   <li>produce (0): records to produce;</li>
 *   <li>group: consume in this group until the produced records were read, commit, leave;</li>
 *   <li>read (produce): how many records of this client-id's values the group reads, so that
 *       a session that writes nothing can read what another (same client-id) writes.</li>
 * </ul>
 */
public final class ClientSession {
    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        String prefix = opt.getOrDefault("client-id", "kwire-session");
        boolean admin = Boolean.parseBoolean(opt.getOrDefault("admin", "true"));
        String topic = opt.get("topic");
        boolean create = Boolean.parseBoolean(opt.getOrDefault("create-topic", "false"));
        int partitions = Integer.parseInt(opt.getOrDefault("partitions", "1"));
        int produce = Integer.parseInt(opt.getOrDefault("produce", "0"));
        String group = opt.get("group");
        int read = Integer.parseInt(opt.getOrDefault("read", Integer.toString(produce)));
        if ((create || produce > 0 || group != null) && topic == null) {
            throw new IllegalArgumentException("topic= is needed for create-topic, produce and group");
        }

        if (admin || create) {
            try (Admin a = Admin.create(Common.adminProps(bootstrap, prefix + "-admin"))) {
                var cluster = a.describeCluster();
                Common.log("describeCluster: id=%s nodes=%s", cluster.clusterId().get(30, TimeUnit.SECONDS),
                    cluster.nodes().get(30, TimeUnit.SECONDS));
                Set<String> names = new TreeSet<>(a.listTopics().names().get(30, TimeUnit.SECONDS));
                Common.log("listTopics: %s", names);
                if (create && !names.contains(topic)) {
                    a.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
                    Common.log("created topic %s (%d partitions)", topic, partitions);
                }
            }
        }

        String valuePrefix = prefix + "/";
        if (produce > 0) {
            List<String[]> records = new ArrayList<>();
            for (int i = 0; i < produce; i++) records.add(new String[] {"k" + i, valuePrefix + "record" + i});
            Common.produce(bootstrap, prefix + "-producer", topic, records);
            Common.log("produced %d records to %s", produce, topic);
        }

        if (group != null) {
            Properties cp = new Properties();
            cp.put("bootstrap.servers", bootstrap);
            cp.put("client.id", prefix + "-consumer");
            cp.put("group.id", group);
            cp.put("group.protocol", "consumer");
            cp.put("enable.auto.commit", "false");
            cp.put("auto.offset.reset", "earliest");
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            Common.withClientConfig(cp);
            int mine = 0;
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
                consumer.subscribe(List.of(topic));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (mine < read && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                        if (r.value() != null && r.value().startsWith(valuePrefix)) mine++;
                    }
                }
                if (mine < read) throw new IllegalStateException("read " + mine + " of " + read + " records");
                consumer.commitSync(Duration.ofSeconds(30));
                Common.log("group %s: read the %d records of this session from %s, committed %s", group, mine, topic,
                    consumer.assignment());
            }
            Common.log("consumer closed (left group %s)", group);
        }
    }
}
