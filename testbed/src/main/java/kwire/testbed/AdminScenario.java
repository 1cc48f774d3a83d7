package kwire.testbed;

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.TopicDescription;

/**
 * After the app has stopped: describeStreamsGroups (with the topology description),
 * describeTopics (DescribeTopicPartitions), then deleteStreamsGroups.
 */
public final class AdminScenario {
    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-admin-scenario"))) {
            StreamsGroupDescription d = admin.describeStreamsGroups(List.of(Common.APPLICATION_ID),
                    new DescribeStreamsGroupsOptions().includeTopologyDescription(true))
                .all().get(30, TimeUnit.SECONDS).get(Common.APPLICATION_ID);
            Common.log("describeStreamsGroups: %s", d);

            var topics = admin.describeTopics(List.of(Common.SOURCE_TOPIC, Common.SINK_TOPIC))
                .allTopicNames().get(30, TimeUnit.SECONDS);
            for (TopicDescription t : topics.values()) {
                Common.log("describeTopics: %s id=%s partitions=%d", t.name(), t.topicId(), t.partitions().size());
            }

            admin.deleteStreamsGroups(List.of(Common.APPLICATION_ID)).all().get(30, TimeUnit.SECONDS);
            Common.log("deleteStreamsGroups: %s deleted", Common.APPLICATION_ID);
        }
    }
}
