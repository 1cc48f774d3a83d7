package kwire.testbed;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.TopicDescription;

/**
 * Scenario "admin": Admin-client calls against a streams group that is Empty (its app
 * has run and left):
 * <ol>
 *   <li>describeStreamsGroups without, then with, the topology description
 *       (StreamsGroupDescribe v1, IncludeTopologyDescription false / true);</li>
 *   <li>describeTopics (DescribeTopicPartitions v0);</li>
 *   <li>deleteStreamsGroups while the plugin's deleteTopology fails (DeleteGroups v3:
 *       GROUP_DELETION_FAILED with an ErrorMessage; the group stays);</li>
 *   <li>describe again, then deleteStreamsGroups with the plugin healthy (success);</li>
 *   <li>describe once more: the group is gone (GROUP_ID_NOT_FOUND).</li>
 * </ol>
 * args: bootstrap group=ID control=PATH  (control: the plugin's control file)
 */
public final class AdminGroupScenario {
    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        String group = opt.getOrDefault("group", Common.APPLICATION_ID);
        Path control = Path.of(opt.get("control"));
        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-admin-scenario"))) {
            Common.logDescription("describe (no topology description)", Common.describe(admin, group, false));
            Common.logDescription("describe (with topology description)", Common.describe(admin, group, true));

            var topics = admin.describeTopics(List.of(Common.SOURCE_TOPIC, Common.SINK_TOPIC))
                .allTopicNames().get(30, TimeUnit.SECONDS);
            for (TopicDescription t : topics.values()) {
                Common.log("describeTopics: %s id=%s partitions=%d", t.name(), t.topicId(), t.partitions().size());
            }

            Common.writeControl(control, "deleteTopology." + group + "=fail\n");
            try {
                admin.deleteStreamsGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
                throw new IllegalStateException("deleteStreamsGroups succeeded although the plugin's delete fails");
            } catch (ExecutionException e) {
                Common.log("deleteStreamsGroups failed as expected: %s: %s",
                    e.getCause().getClass().getSimpleName(), e.getCause().getMessage());
            }
            StreamsGroupDescription still = Common.describe(admin, group, false);
            Common.logDescription("describe after the failed delete", still);

            Common.writeControl(control, "");
            admin.deleteStreamsGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
            Common.log("deleteStreamsGroups: %s deleted", group);

            try {
                Common.describe(admin, group, false);
                throw new IllegalStateException("group " + group + " still described after deletion");
            } catch (ExecutionException e) {
                Common.log("describe after delete: %s: %s", e.getCause().getClass().getSimpleName(), e.getCause().getMessage());
            }
        }
    }
}
