package kwire.testbed;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.FindCoordinatorResponseData;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData;
import org.apache.kafka.common.message.StreamsGroupHeartbeatResponseData;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.FindCoordinatorRequest;
import org.apache.kafka.common.requests.FindCoordinatorResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatRequest;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatResponse;

/**
 * A streams-group member that is not Kafka Streams: it builds StreamsGroupHeartbeat v1
 * requests with kafka-clients 4.4.0's own generated message classes and sends them on a
 * plain socket (client id "kwire-raw-streams-member"). Kafka Streams 4.4.0 always sends
 * topology epoch 0 (StreamsRebalanceData.topologyEpoch() returns 0), and the 4.4.0
 * coordinator rejects a different topology for an existing group ("Topology updates are
 * not supported yet."), so a group topology epoch above 0 -- and with it the
 * STALE_TOPOLOGY status for a Kafka Streams member -- can only be had this way: this
 * member creates the group with the appendix app's heartbeat topology at
 * {@code topology-epoch}, heartbeats until it owns its task, then leaves.
 *
 * <p>args: bootstrap group=ID [topology-epoch=1] [split-size-prefix=false]
 * (the bootstrap broker must be the group's coordinator, which holds for the
 * single-node testbed). split-size-prefix=true sends each request's 4-byte size in a
 * TCP segment of its own before the rest, as some non-Java clients do.
 */
public final class RawStreamsMember {
    private static final String CLIENT_ID = "kwire-raw-streams-member";
    private static int correlationId = 0;
    private static boolean splitSizePrefix = false;

    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        String group = opt.get("group");
        int topologyEpoch = Integer.parseInt(opt.getOrDefault("topology-epoch", "1"));
        splitSizePrefix = Boolean.parseBoolean(opt.getOrDefault("split-size-prefix", "false"));
        String[] hostPort = bootstrap.split(":");
        String memberId = Uuid.randomUuid().toString();

        try (Socket socket = new Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
            socket.setSoTimeout(30_000);
            socket.setTcpNoDelay(true);
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            DataInputStream in = new DataInputStream(socket.getInputStream());

            send(out, in, new ApiVersionsRequest.Builder(new ApiVersionsRequestData()
                .setClientSoftwareName("kwire-raw-streams-member").setClientSoftwareVersion("4.4.0"), (short) 4, (short) 4)
                .build((short) 4));

            // FindCoordinator first: it also makes the broker create __consumer_offsets on a
            // fresh cluster; until the coordinator is loaded, retry.
            for (int attempt = 1; ; attempt++) {
                FindCoordinatorResponse fc = (FindCoordinatorResponse) send(out, in, new FindCoordinatorRequest.Builder(
                    new FindCoordinatorRequestData().setKeyType((byte) 0).setCoordinatorKeys(List.of(group)))
                    .build((short) 6));
                FindCoordinatorResponseData.Coordinator c = fc.coordinators().get(0);
                Common.log("FindCoordinator %s -> error=%d node=%d %s:%d", group, c.errorCode(), c.nodeId(), c.host(), c.port());
                if (c.errorCode() == 0) {
                    if (c.port() != Integer.parseInt(hostPort[1])) {
                        throw new IllegalStateException("the coordinator is not the bootstrap broker");
                    }
                    break;
                }
                if (attempt == 60) throw new IllegalStateException("no coordinator for " + group);
                Thread.sleep(500);
            }

            StreamsGroupHeartbeatRequestData join = new StreamsGroupHeartbeatRequestData()
                .setGroupId(group)
                .setMemberId(memberId)
                .setMemberEpoch(0)
                .setEndpointInformationEpoch(-1)
                .setRebalanceTimeoutMs(30_000)
                .setTopology(new StreamsGroupHeartbeatRequestData.Topology()
                    .setEpoch(topologyEpoch)
                    .setSubtopologies(List.of(new StreamsGroupHeartbeatRequestData.Subtopology()
                        .setSubtopologyId("0")
                        .setSourceTopics(List.of(Common.SOURCE_TOPIC)))))
                .setActiveTasks(List.of())
                .setStandbyTasks(List.of())
                .setWarmupTasks(List.of())
                .setProcessId(UUID.randomUUID().toString())
                .setClientTags(List.of())
                .setTaskOffsets(List.of())
                .setTaskEndOffsets(List.of());
            StreamsGroupHeartbeatResponseData r;
            for (int attempt = 1; ; attempt++) {
                r = heartbeat(out, in, join, true);
                if (r.errorCode() == 0) break;
                if (attempt == 60) throw new IllegalStateException("join failed: " + r.errorMessage());
                Thread.sleep(500);
            }
            int epoch = r.memberEpoch();
            long deadline = System.nanoTime() + 30_000_000_000L;
            // Heartbeat until the member owns an active task (after the initial rebalance delay),
            // acknowledging the assignment it was given.
            List<StreamsGroupHeartbeatRequestData.TaskIds> owned = List.of();
            while (System.nanoTime() < deadline) {
                if (r.activeTasks() != null) {
                    owned = r.activeTasks().stream().map(t -> new StreamsGroupHeartbeatRequestData.TaskIds()
                        .setSubtopologyId(t.subtopologyId()).setPartitions(t.partitions())).toList();
                    if (!owned.isEmpty()) break;
                }
                Thread.sleep(Math.max(500, r.heartbeatIntervalMs()));
                r = heartbeat(out, in, new StreamsGroupHeartbeatRequestData()
                    .setGroupId(group).setMemberId(memberId).setMemberEpoch(epoch));
                epoch = r.memberEpoch();
            }
            if (owned.isEmpty()) throw new IllegalStateException("no task assigned to the raw member");
            r = heartbeat(out, in, new StreamsGroupHeartbeatRequestData()
                .setGroupId(group).setMemberId(memberId).setMemberEpoch(epoch)
                .setActiveTasks(owned).setStandbyTasks(List.of()).setWarmupTasks(List.of()));
            epoch = r.memberEpoch();
            Common.log("raw member %s owns %s at epoch %d; leaving", memberId, owned, epoch);
            heartbeat(out, in, new StreamsGroupHeartbeatRequestData()
                .setGroupId(group).setMemberId(memberId).setMemberEpoch(-1));
        }
    }

    private static StreamsGroupHeartbeatResponseData heartbeat(DataOutputStream out, DataInputStream in,
                                                               StreamsGroupHeartbeatRequestData data) throws Exception {
        return heartbeat(out, in, data, false);
    }

    /** With retriable=true, the coordinator errors (loading, not available, not coordinator) are returned. */
    private static StreamsGroupHeartbeatResponseData heartbeat(DataOutputStream out, DataInputStream in,
                                                               StreamsGroupHeartbeatRequestData data,
                                                               boolean retriable) throws Exception {
        StreamsGroupHeartbeatResponse resp = (StreamsGroupHeartbeatResponse) send(out, in,
            new StreamsGroupHeartbeatRequest.Builder(data).build((short) 1));
        StreamsGroupHeartbeatResponseData r = resp.data();
        Common.log("heartbeat epoch %d -> error=%d epoch=%d status=%s active=%s", data.memberEpoch(), r.errorCode(),
            r.memberEpoch(), r.status(), r.activeTasks());
        Errors error = Errors.forCode(r.errorCode());
        boolean coordinatorError = error == Errors.COORDINATOR_LOAD_IN_PROGRESS
            || error == Errors.COORDINATOR_NOT_AVAILABLE || error == Errors.NOT_COORDINATOR;
        if (error != Errors.NONE && !(retriable && coordinatorError)) {
            throw new IllegalStateException("heartbeat failed: " + error + ": " + r.errorMessage());
        }
        return r;
    }

    private static AbstractResponse send(DataOutputStream out, DataInputStream in, AbstractRequest request)
            throws Exception {
        RequestHeader header = new RequestHeader(request.apiKey(), request.version(), CLIENT_ID, ++correlationId);
        ByteBuffer buf = request.serializeWithHeader(header);
        int size = buf.remaining();
        if (splitSizePrefix) {
            // The 4-byte size prefix in a TCP segment of its own, then the message.
            out.writeInt(size);
            out.flush();
            Thread.sleep(20);
            byte[] bytes = new byte[size];
            buf.get(bytes);
            out.write(bytes);
        } else {
            // Size prefix and message in one write, as the Java client does.
            ByteBuffer whole = ByteBuffer.allocate(4 + size).putInt(size).put(buf);
            out.write(whole.array());
        }
        out.flush();
        byte[] resp = new byte[in.readInt()];
        in.readFully(resp);
        return AbstractResponse.parseResponse(ByteBuffer.wrap(resp), header);
    }
}
