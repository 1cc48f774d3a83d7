package kwire.testbed;

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;

/** Waits for the broker to answer, then creates the orders and valid-orders topics. */
public final class CreateTopics {
    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
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
            admin.createTopics(List.of(
                    new NewTopic(Common.SOURCE_TOPIC, 1, (short) 1),
                    new NewTopic(Common.SINK_TOPIC, 1, (short) 1)))
                .all().get(30, TimeUnit.SECONDS);
            Common.log("created topics %s, %s", Common.SOURCE_TOPIC, Common.SINK_TOPIC);
        }
    }
}
