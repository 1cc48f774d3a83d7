package kwire.testbed;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.coordinator.group.api.streams.StreamsGroupTopologyDescription;
import org.apache.kafka.coordinator.group.api.streams.StreamsGroupTopologyDescriptionPlugin;

/**
 * Broker-side plugin (group.streams.topology.description.plugin.class) that keeps
 * the topology descriptions pushed by Streams clients in memory, keyed by group id.
 * Only the newest topology epoch per group is kept. Nothing survives a restart,
 * which is all the capture testbed needs.
 */
public final class InMemoryTopologyDescriptionPlugin implements StreamsGroupTopologyDescriptionPlugin {

    private record Stored(int topologyEpoch, StreamsGroupTopologyDescription description) { }

    private final Map<String, Stored> byGroup = new ConcurrentHashMap<>();

    @Override
    public void configure(Map<String, ?> configs) {
        // No settings.
    }

    @Override
    public CompletableFuture<Void> setTopology(String groupId, int topologyEpoch,
                                               StreamsGroupTopologyDescription description) {
        byGroup.merge(groupId, new Stored(topologyEpoch, description),
            (old, neu) -> neu.topologyEpoch() >= old.topologyEpoch() ? neu : old);
        System.err.printf("[topology-plugin] stored group=%s epoch=%d subtopologies=%d%n",
            groupId, topologyEpoch, description.subtopologies().size());
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Void> deleteTopology(String groupId) {
        byGroup.remove(groupId);
        System.err.printf("[topology-plugin] deleted group=%s%n", groupId);
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<StreamsGroupTopologyDescription> getTopology(String groupId, int topologyEpoch) {
        Stored s = byGroup.get(groupId);
        // null means "not available" for this group/epoch.
        if (s == null || s.topologyEpoch() != topologyEpoch) {
            return CompletableFuture.completedFuture(null);
        }
        return CompletableFuture.completedFuture(s.description());
    }

    @Override
    public void close() {
        byGroup.clear();
    }
}
