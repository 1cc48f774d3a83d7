package kwire.testbed;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.common.GroupState;

/**
 * Describes a streams group with its topology description (StreamsGroupDescribe v1).
 * args: bootstrap group=ID [wait-members=N wait-seconds=S] [delete=true]
 * <ul>
 *   <li>wait-members: describe every second until the group is Stable with N members
 *       whose epoch is the group epoch;</li>
 *   <li>delete: deleteStreamsGroups afterwards (the group must be Empty).</li>
 * </ul>
 */
public final class DescribeGroup {
    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        String group = opt.get("group");
        int waitMembers = Integer.parseInt(opt.getOrDefault("wait-members", "0"));
        int waitSeconds = Integer.parseInt(opt.getOrDefault("wait-seconds", "60"));
        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-describe-group"))) {
            StreamsGroupDescription d;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(waitSeconds);
            while (true) {
                d = Common.describe(admin, group, true);
                int epoch = d.groupEpoch();
                boolean settled = d.groupState() == GroupState.STABLE && d.members().size() >= waitMembers
                    && d.members().stream().allMatch(m -> m.memberEpoch() == epoch);
                if (waitMembers == 0 || settled) break;
                if (System.nanoTime() > deadline) {
                    Common.logDescription("describe", d);
                    throw new IllegalStateException("group " + group + " not Stable with " + waitMembers + " members");
                }
                Thread.sleep(1000);
            }
            Common.logDescription("describe", d);
            if (Boolean.parseBoolean(opt.getOrDefault("delete", "false"))) {
                admin.deleteStreamsGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
                Common.log("deleteStreamsGroups: %s deleted", group);
            }
        }
    }
}
