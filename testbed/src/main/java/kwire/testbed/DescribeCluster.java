package kwire.testbed;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.utils.Utils;

/**
 * Says where each role lives in a cluster, as Kafka's Admin client sees it: the
 * brokers, every partition's leader, replicas and high watermark (internal topics
 * too; the high watermark as Admin's listOffsets gives the latest offset, -1 where it
 * cannot), and the coordinator of each named group, which is the leader of the
 * __consumer_offsets partition the group hashes to (Kafka's own rule:
 * abs(groupId.hashCode()) % count; the same for classic, consumer, share and streams
 * groups). A broker with a broker.rack has it on its line. Brokers answer DescribeCluster
 * with a random live broker as "controller"; quorum=true asks the controllers
 * (DescribeQuorum through a broker) for the active one, the voters and the observers.
 * features=true adds the finalized feature levels, txns= the coordinator and state of
 * each transactional id (DescribeTransactions).
 * args: bootstrap [groups=a,b,...] [txns=a,b,...] [quorum=true] [features=true]
 *
 * <p>Lines, sorted:
 * <pre>
 * broker 1 127.0.0.11:9092
 * broker 4 127.0.0.24:9092 rack=r1
 * controller 2
 * quorum leader=2 epoch=1 high-watermark=1234
 * quorum voter 1 log-end-offset=1234
 * quorum observer 4 log-end-offset=1234
 * feature transaction.version 2
 * leader clicks 0 2 replicas=2,3,1 isr=2,3,1 id=Bg3R7XaKS1ioZVRsuWFdvQ hw=222
 * coordinator stateful-app 3 partition=17
 * transaction prod-payments-txn coordinator=2 state=CompleteCommit
 * </pre>
 */
public final class DescribeCluster {
    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        List<String> groups = new ArrayList<>();
        for (String g : opt.getOrDefault("groups", "").split(",")) if (!g.isEmpty()) groups.add(g);
        List<String> txns = new ArrayList<>();
        for (String t : opt.getOrDefault("txns", "").split(",")) if (!t.isEmpty()) txns.add(t);
        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-describe-cluster"))) {
            DescribeClusterResult cluster = admin.describeCluster();
            List<Node> nodes = new ArrayList<>(cluster.nodes().get());
            nodes.sort(Comparator.comparingInt(Node::id));
            for (Node n : nodes) {
                System.out.println("broker " + n.id() + " " + n.host() + ":" + n.port() + (n.hasRack() ? " rack=" + n.rack() : ""));
            }
            Node controller = cluster.controller().get();
            if (controller != null) System.out.println("controller " + controller.id());
            if (Boolean.parseBoolean(opt.getOrDefault("quorum", "false"))) {
                QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get();
                System.out.println("quorum leader=" + q.leaderId() + " epoch=" + q.leaderEpoch() + " high-watermark=" + q.highWatermark());
                for (QuorumInfo.ReplicaState r : sortedReplicas(q.voters())) {
                    System.out.println("quorum voter " + r.replicaId() + " log-end-offset=" + r.logEndOffset());
                }
                for (QuorumInfo.ReplicaState r : sortedReplicas(q.observers())) {
                    System.out.println("quorum observer " + r.replicaId() + " log-end-offset=" + r.logEndOffset());
                }
            }
            if (Boolean.parseBoolean(opt.getOrDefault("features", "false"))) {
                FeatureMetadata f = admin.describeFeatures().featureMetadata().get();
                new TreeMap<>(f.finalizedFeatures()).forEach((name, range) ->
                    System.out.println("feature " + name + " " + range.maxVersionLevel()));
            }
            var names = admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get();
            Map<String, TopicDescription> topics = new TreeMap<>(admin.describeTopics(names).allTopicNames().get());
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicDescription t : topics.values())
                for (TopicPartitionInfo p : t.partitions()) latest.put(new TopicPartition(t.name(), p.partition()), OffsetSpec.latest());
            ListOffsetsResult offsets = admin.listOffsets(latest);
            for (TopicDescription t : topics.values()) {
                for (TopicPartitionInfo p : t.partitions()) {
                    long hw;
                    try {
                        hw = offsets.partitionResult(new TopicPartition(t.name(), p.partition())).get().offset();
                    } catch (ExecutionException e) {
                        hw = -1;
                    }
                    System.out.println("leader " + t.name() + " " + p.partition() + " "
                            + (p.leader() == null ? -1 : p.leader().id())
                            + " replicas=" + ids(p.replicas()) + " isr=" + ids(p.isr()) + " id=" + t.topicId() + " hw=" + hw);
                }
            }
            TopicDescription consumerOffsets = topics.get("__consumer_offsets");
            for (String g : groups) {
                if (consumerOffsets == null) {
                    System.out.println("coordinator " + g + " -1 (no __consumer_offsets)");
                    continue;
                }
                int partition = Utils.abs(g.hashCode()) % consumerOffsets.partitions().size();
                Node leader = consumerOffsets.partitions().get(partition).leader();
                System.out.println("coordinator " + g + " " + (leader == null ? -1 : leader.id()) + " partition=" + partition);
            }
            if (!txns.isEmpty()) {
                Map<String, TransactionDescription> described = new TreeMap<>(admin.describeTransactions(txns).all().get());
                described.forEach((id, t) -> System.out.println("transaction " + id + " coordinator=" + t.coordinatorId()
                        + " state=" + t.state()));
            }
        }
    }

    private static List<QuorumInfo.ReplicaState> sortedReplicas(List<QuorumInfo.ReplicaState> replicas) {
        List<QuorumInfo.ReplicaState> out = new ArrayList<>(replicas);
        out.sort(Comparator.comparingInt(QuorumInfo.ReplicaState::replicaId));
        return out;
    }

    private static String ids(List<Node> nodes) {
        StringBuilder b = new StringBuilder();
        for (Node n : nodes) b.append(b.length() == 0 ? "" : ",").append(n.id());
        return b.toString();
    }
}
