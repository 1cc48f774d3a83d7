package kwire.testbed;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.errors.GroupIdNotFoundException;

/**
 * Describes a streams group with its topology description (StreamsGroupDescribe v1).
 * args: bootstrap group=ID [wait-members=N wait-seconds=S] [delete=true] [json=true]
 * <ul>
 *   <li>wait-members: describe every second until the group is Stable with N members
 *       whose epoch is the group epoch (a group that does not exist yet is waited for);</li>
 *   <li>delete: deleteStreamsGroups afterwards (the group must be Empty);</li>
 *   <li>json: print the (last) description as one JSON line on stdout instead of the
 *       log lines, and nothing else; a group the broker does not know is
 *       {"group":ID,"found":false,...} (exit 0) instead of an error.</li>
 * </ul>
 *
 * <p>The JSON line (keys in this order; members sorted by member id; task counts are
 * partitions summed over sub-topologies):
 * <pre>
 * {"group":"orders-app","found":true,"state":"Stable","groupEpoch":3,"targetAssignmentEpoch":3,
 *  "topologyEpoch":0,"assignor":"sticky","topologyDescriptionStatus":"AVAILABLE",
 *  "topologyDescription":true,
 *  "members":[{"memberId":"...","clientId":"...","processId":"...","memberEpoch":3,
 *              "topologyEpoch":0,"isClassic":false,
 *              "assignment":{"active":2,"standby":1,"warmup":0},
 *              "targetAssignment":{"active":2,"standby":1,"warmup":0}}],
 *  "deleted":false}
 * </pre>
 */
public final class DescribeGroup {
    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        String group = opt.get("group");
        int waitMembers = Integer.parseInt(opt.getOrDefault("wait-members", "0"));
        int waitSeconds = Integer.parseInt(opt.getOrDefault("wait-seconds", "60"));
        boolean json = Boolean.parseBoolean(opt.getOrDefault("json", "false"));
        boolean delete = Boolean.parseBoolean(opt.getOrDefault("delete", "false"));
        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-describe-group"))) {
            StreamsGroupDescription d;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(waitSeconds);
            while (true) {
                d = null;
                try {
                    d = Common.describe(admin, group, true);
                } catch (ExecutionException e) {
                    // While waiting for members, a group not created yet is described again.
                    if (!(e.getCause() instanceof GroupIdNotFoundException) || (waitMembers == 0 && !json)) throw e;
                    if (waitMembers == 0) {
                        System.out.println(Json.write(toJson(group, null, false)));
                        return;
                    }
                }
                if (d != null) {
                    int epoch = d.groupEpoch();
                    boolean settled = d.groupState() == GroupState.STABLE && d.members().size() >= waitMembers
                        && d.members().stream().allMatch(m -> m.memberEpoch() == epoch);
                    if (waitMembers == 0 || settled) break;
                }
                if (System.nanoTime() > deadline) {
                    if (json) System.out.println(Json.write(toJson(group, d, false)));
                    else if (d != null) Common.logDescription("describe", d);
                    throw new IllegalStateException("group " + group + " not Stable with " + waitMembers + " members");
                }
                Thread.sleep(1000);
            }
            if (!json) Common.logDescription("describe", d);
            if (delete) {
                admin.deleteStreamsGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
                if (!json) Common.log("deleteStreamsGroups: %s deleted", group);
            }
            if (json) System.out.println(Json.write(toJson(group, d, delete)));
        }
    }

    static Map<String, Object> toJson(String group, StreamsGroupDescription d, boolean deleted) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("group", group);
        out.put("found", d != null);
        out.put("state", d == null ? null : d.groupState().toString());
        out.put("groupEpoch", d == null ? null : d.groupEpoch());
        out.put("targetAssignmentEpoch", d == null ? null : d.targetAssignmentEpoch());
        out.put("topologyEpoch", d == null ? null : d.topologyEpoch());
        out.put("assignor", d == null ? null : d.assignorName().orElse(null));
        out.put("topologyDescriptionStatus", d == null ? null : d.topologyDescriptionStatus().name());
        out.put("topologyDescription", d != null && d.topologyDescription().isPresent());
        List<Map<String, Object>> members = new ArrayList<>();
        if (d != null) {
            List<StreamsGroupMemberDescription> sorted = new ArrayList<>(d.members());
            sorted.sort(Comparator.comparing(StreamsGroupMemberDescription::memberId));
            for (StreamsGroupMemberDescription m : sorted) {
                Map<String, Object> mj = new LinkedHashMap<>();
                mj.put("memberId", m.memberId());
                mj.put("clientId", m.clientId());
                mj.put("processId", m.processId());
                mj.put("memberEpoch", m.memberEpoch());
                mj.put("topologyEpoch", m.topologyEpoch());
                mj.put("isClassic", m.isClassic());
                mj.put("assignment", taskCounts(m.assignment()));
                mj.put("targetAssignment", taskCounts(m.targetAssignment()));
                members.add(mj);
            }
        }
        out.put("members", members);
        out.put("deleted", deleted);
        return out;
    }

    static Map<String, Object> taskCounts(StreamsGroupMemberAssignment a) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("active", count(a.activeTasks()));
        out.put("standby", count(a.standbyTasks()));
        out.put("warmup", count(a.warmupTasks()));
        return out;
    }

    private static int count(List<StreamsGroupMemberAssignment.TaskIds> tasks) {
        return tasks.stream().mapToInt(t -> t.partitions().size()).sum();
    }
}
