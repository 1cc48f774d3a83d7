package kwire.testbed;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * Waits for the broker to answer, then creates topics.
 * args: bootstrap [topic[:partitions[:replication-factor]] ...] [config=value ...]
 * (default: orders, valid-orders, one partition each). A config=value argument is a
 * topic config set on every topic of the request (e.g. retention.ms=-1).
 */
public final class CreateTopics {
    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        List<NewTopic> topics = new ArrayList<>();
        Map<String, String> configs = new LinkedHashMap<>();
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq > 0) {
                configs.put(args[i].substring(0, eq), args[i].substring(eq + 1));
                continue;
            }
            String[] nameAndCount = args[i].split(":", 3);
            int partitions = nameAndCount.length > 1 ? Integer.parseInt(nameAndCount[1]) : 1;
            short replicas = nameAndCount.length > 2 ? Short.parseShort(nameAndCount[2]) : 1;
            topics.add(new NewTopic(nameAndCount[0], partitions, replicas));
        }
        if (topics.isEmpty()) {
            topics.add(new NewTopic(Common.SOURCE_TOPIC, 1, (short) 1));
            topics.add(new NewTopic(Common.SINK_TOPIC, 1, (short) 1));
        }
        if (!configs.isEmpty()) topics.forEach(t -> t.configs(configs));
        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-create-topics"))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try {
                    var nodes = admin.describeCluster().nodes().get(10, TimeUnit.SECONDS);
                    Common.log("broker up: %s", nodes);
                    break;
                } catch (Exception e) {
                    if (System.nanoTime() > deadline) throw e;
                    Thread.sleep(500);
                }
            }
            admin.createTopics(topics).all().get(30, TimeUnit.SECONDS);
            Common.log("created topics %s%s", topics.stream().map(t -> t.name() + "(" + t.numPartitions() + ")").toList(),
                configs.isEmpty() ? "" : " with " + configs);
        }
    }
}
