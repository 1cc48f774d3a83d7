package kwire.testbed;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberAssignment;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;

/**
 * Describes a consumer group and its committed offsets with the Admin client
 * (describeConsumerGroups, listConsumerGroupOffsets) and prints what it found as one
 * JSON line on stdout -- nothing else goes to stdout; client logging goes to stderr.
 *
 * <p>args: bootstrap group=ID [expect-committed=TOPIC:PARTITION:OFFSET,...] [wait-seconds=S]
 * <ul>
 *   <li>expect-committed: offsets the group must have committed; each is reported under
 *       "expected" and all of them together in "ok";</li>
 *   <li>wait-seconds (0): look again every 500 ms until the expectations hold, for up
 *       to S seconds.</li>
 * </ul>
 *
 * <p>Output (keys in this order; "found" is false, with null type, state, epochs and
 * assignor and no members, when the broker knows no consumer group of that id -- a
 * streams group is not one, but its committed offsets are listed all the same):
 * <pre>
 * {"group":"txn-app","found":true,"type":"Consumer","state":"Empty","groupEpoch":2,
 *  "targetAssignmentEpoch":2,"assignor":"uniform",
 *  "members":[{"memberId":"...","groupInstanceId":null,"clientId":"...","host":"/127.0.0.1",
 *              "memberEpoch":2,"assignment":[{"topic":"txn-in","partition":0}],
 *              "targetAssignment":[...]}],
 *  "committed":[{"topic":"txn-in","partition":0,"offset":12,"leaderEpoch":0,"metadata":""}],
 *  "expected":[{"topic":"txn-in","partition":0,"offset":12,"committed":12,"ok":true}],
 *  "ok":true}
 * </pre>
 * Members and offsets are sorted (member id; topic, partition). Exit status 0 when
 * every expectation holds (or none was given), 1 when one does not.
 */
public final class CheckConsumerGroup {
    record Expect(String topic, int partition, long offset) { }

    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        String group = opt.get("group");
        if (group == null || group.isEmpty()) throw new IllegalArgumentException("group=ID is required");
        List<Expect> expects = parseExpect(opt.getOrDefault("expect-committed", ""));
        int waitSeconds = Integer.parseInt(opt.getOrDefault("wait-seconds", "0"));

        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-check-group"))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(waitSeconds);
            Map<String, Object> result;
            while (true) {
                result = look(admin, group, expects);
                if (Boolean.TRUE.equals(result.get("ok")) || System.nanoTime() > deadline) break;
                Thread.sleep(500);
            }
            System.out.println(Json.write(result));
            System.out.flush();
            if (!Boolean.TRUE.equals(result.get("ok"))) System.exit(1);
        }
    }

    static List<Expect> parseExpect(String spec) {
        List<Expect> out = new ArrayList<>();
        for (String item : spec.split(",")) {
            if (item.isBlank()) continue;
            int last = item.lastIndexOf(':');
            int mid = last > 0 ? item.lastIndexOf(':', last - 1) : -1;
            if (mid <= 0) throw new IllegalArgumentException("expect-committed: want TOPIC:PARTITION:OFFSET, got " + item);
            out.add(new Expect(item.substring(0, mid), Integer.parseInt(item.substring(mid + 1, last)),
                Long.parseLong(item.substring(last + 1))));
        }
        return out;
    }

    static Map<String, Object> look(Admin admin, String group, List<Expect> expects) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("group", group);
        ConsumerGroupDescription d = null;
        try {
            d = admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof GroupIdNotFoundException)) throw e;
        }
        // A classic-protocol describe answers an unknown group with state Dead instead.
        boolean found = d != null && d.groupState() != org.apache.kafka.common.GroupState.DEAD;
        out.put("found", found);
        out.put("type", found ? d.type().toString() : null);
        out.put("state", found ? d.groupState().toString() : null);
        out.put("groupEpoch", found ? d.groupEpoch() : null);
        out.put("targetAssignmentEpoch", found ? d.targetAssignmentEpoch() : null);
        out.put("assignor", found && d.partitionAssignor() != null && !d.partitionAssignor().isEmpty()
            ? d.partitionAssignor() : null);
        List<Map<String, Object>> members = new ArrayList<>();
        if (found) {
            List<MemberDescription> sorted = new ArrayList<>(d.members());
            sorted.sort(Comparator.comparing(MemberDescription::consumerId));
            for (MemberDescription m : sorted) {
                Map<String, Object> mj = new LinkedHashMap<>();
                mj.put("memberId", m.consumerId());
                mj.put("groupInstanceId", m.groupInstanceId());
                mj.put("clientId", m.clientId());
                mj.put("host", m.host());
                mj.put("memberEpoch", m.memberEpoch());
                mj.put("assignment", partitions(m.assignment()));
                mj.put("targetAssignment", m.targetAssignment().map(CheckConsumerGroup::partitions).orElse(null));
                members.add(mj);
            }
        }
        out.put("members", members);

        // Offsets are read even when the describe found no consumer group: a streams group
        // (not a consumer group to ConsumerGroupDescribe) has committed offsets too.
        Map<TopicPartition, OffsetAndMetadata> offsets;
        try {
            offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof GroupIdNotFoundException)) throw e;
            offsets = Map.of();
        }
        List<TopicPartition> tps = new ArrayList<>(offsets.keySet());
        tps.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        List<Map<String, Object>> committed = new ArrayList<>();
        for (TopicPartition tp : tps) {
            OffsetAndMetadata om = offsets.get(tp);
            if (om == null) continue;
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("topic", tp.topic());
            c.put("partition", tp.partition());
            c.put("offset", om.offset());
            c.put("leaderEpoch", om.leaderEpoch());
            c.put("metadata", om.metadata());
            committed.add(c);
        }
        out.put("committed", committed);

        boolean ok = true;
        List<Map<String, Object>> expected = new ArrayList<>();
        for (Expect e : expects) {
            OffsetAndMetadata om = offsets.get(new TopicPartition(e.topic(), e.partition()));
            Long have = om == null ? null : om.offset();
            boolean match = have != null && have == e.offset();
            ok &= match;
            Map<String, Object> x = new LinkedHashMap<>();
            x.put("topic", e.topic());
            x.put("partition", e.partition());
            x.put("offset", e.offset());
            x.put("committed", have);
            x.put("ok", match);
            expected.add(x);
        }
        out.put("expected", expected);
        out.put("ok", ok);
        return out;
    }

    static List<Map<String, Object>> partitions(MemberAssignment a) {
        List<TopicPartition> tps = new ArrayList<>(a.topicPartitions());
        tps.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        List<Map<String, Object>> out = new ArrayList<>();
        for (TopicPartition tp : tps) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("topic", tp.topic());
            p.put("partition", tp.partition());
            out.add(p);
        }
        return out;
    }
}
