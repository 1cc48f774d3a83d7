package kwire.testbed;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.coordinator.group.api.streams.StreamsGroupTopologyDescription;
import org.apache.kafka.coordinator.group.api.streams.StreamsGroupTopologyDescriptionPlugin;
import org.apache.kafka.coordinator.group.api.streams.StreamsTopologyDescriptionPermanentFailureException;
import org.apache.kafka.coordinator.group.api.streams.StreamsTopologyDescriptionTransientFailureException;

/**
 * Broker-side plugin (group.streams.topology.description.plugin.class) that keeps
 * the topology descriptions pushed by Streams clients in memory, keyed by group id.
 * Only the newest topology epoch per group is kept. Nothing survives a restart,
 * which is all the capture testbed needs.
 *
 * <p>Failure switches, so that the KIP-1331 error paths can be put on the wire.
 * They are read from a control file (java.util.Properties syntax) on every call,
 * so a scenario can flip them while the broker runs. The file's path comes from
 * the broker config {@value #CONTROL_FILE_CONFIG} (any broker property reaches
 * {@link #configure}), or else from the JVM system property of the same name.
 * A missing file means "no failures". Keys, a per-group key winning over the
 * plain one:
 * <pre>
 *   setTopology[.GROUP]    = ok | permanent | transient | transient:N
 *   deleteTopology[.GROUP] = ok | fail | fail:N
 * </pre>
 * {@code transient:N} fails the first N setTopology calls of a group with a
 * transient error and then stores normally ({@code fail:N} likewise for deletes).
 * The counts restart whenever the control file's content changes. Without a
 * control file entry, the system properties {@code kwire.plugin.setTopology} and
 * {@code kwire.plugin.deleteTopology} give the same settings for every group.
 *
 * <p>How Kafka 4.4.0 maps the outcomes (GroupCoordinatorService and
 * StreamsGroupTopologyDescriptionManager in kafka-group-coordinator-4.4.0.jar):
 * a future failed with {@link StreamsTopologyDescriptionPermanentFailureException}
 * makes the StreamsGroupTopologyDescriptionUpdate response carry
 * STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED with the exception's message and
 * records the epoch as failed; any other exception (here
 * {@link StreamsTopologyDescriptionTransientFailureException}) gives the same
 * error code and message but only arms the broker's retry back-off, after which
 * the broker asks the member to push again. A failed deleteTopology makes
 * DeleteGroups answer GROUP_DELETION_FAILED for that group, with the broker's own
 * message, and the group is kept.
 */
public final class InMemoryTopologyDescriptionPlugin implements StreamsGroupTopologyDescriptionPlugin {

    /** Broker config key (and JVM system property) naming the control file. */
    public static final String CONTROL_FILE_CONFIG = "kwire.plugin.control.file";

    private record Stored(int topologyEpoch, StreamsGroupTopologyDescription description) { }

    private final Map<String, Stored> byGroup = new ConcurrentHashMap<>();
    /** Failures injected so far per "op/group", for the ":N" forms; reset when the file changes. */
    private final Map<String, Integer> injected = new ConcurrentHashMap<>();
    private volatile Path controlFile;
    private volatile String lastControlContent = "";

    @Override
    public void configure(Map<String, ?> configs) {
        Object fromBroker = configs.get(CONTROL_FILE_CONFIG);
        String path = fromBroker != null ? fromBroker.toString() : System.getProperty(CONTROL_FILE_CONFIG);
        controlFile = path == null || path.isBlank() ? null : Path.of(path);
        log("configured, control file %s", controlFile == null ? "<none>" : controlFile);
    }

    @Override
    public CompletableFuture<Void> setTopology(String groupId, int topologyEpoch,
                                               StreamsGroupTopologyDescription description) {
        String mode = setting("setTopology", groupId);
        if (shouldFail(mode, "permanent", "setTopology", groupId)) {
            log("setTopology group=%s epoch=%d: failing permanently", groupId, topologyEpoch);
            return CompletableFuture.failedFuture(new StreamsTopologyDescriptionPermanentFailureException(
                "kwire testbed plugin rejects topology epoch " + topologyEpoch + " of group " + groupId
                    + " permanently"));
        }
        if (shouldFail(mode, "transient", "setTopology", groupId)) {
            log("setTopology group=%s epoch=%d: failing transiently", groupId, topologyEpoch);
            return CompletableFuture.failedFuture(new StreamsTopologyDescriptionTransientFailureException(
                "kwire testbed plugin store unavailable for group " + groupId + " (transient, retry later)"));
        }
        byGroup.merge(groupId, new Stored(topologyEpoch, description),
            (old, neu) -> neu.topologyEpoch() >= old.topologyEpoch() ? neu : old);
        log("stored group=%s epoch=%d subtopologies=%d globalStores=%d", groupId, topologyEpoch,
            description.subtopologies().size(), description.globalStores().size());
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Void> deleteTopology(String groupId) {
        String mode = setting("deleteTopology", groupId);
        if (shouldFail(mode, "fail", "deleteTopology", groupId)) {
            log("deleteTopology group=%s: failing", groupId);
            return CompletableFuture.failedFuture(new IllegalStateException(
                "kwire testbed plugin refuses to delete the topology of group " + groupId));
        }
        byGroup.remove(groupId);
        log("deleted group=%s", groupId);
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

    /** "ok" unless the control file or a system property says otherwise. */
    private String setting(String op, String groupId) {
        Properties p = readControl();
        String v = p.getProperty(op + "." + groupId);
        if (v == null) v = p.getProperty(op);
        if (v == null) v = System.getProperty("kwire.plugin." + op);
        return v == null ? "ok" : v.trim();
    }

    /** True when mode is {@code kind} or {@code kind:N} with fewer than N failures injected so far. */
    private boolean shouldFail(String mode, String kind, String op, String groupId) {
        if (mode.equals(kind)) return true;
        if (!mode.startsWith(kind + ":")) return false;
        int limit;
        try {
            limit = Integer.parseInt(mode.substring(kind.length() + 1).trim());
        } catch (NumberFormatException e) {
            log("bad setting %s for %s; ignored", mode, op);
            return false;
        }
        int[] fail = {0};
        injected.compute(op + "/" + groupId, (k, n) -> {
            int done = n == null ? 0 : n;
            if (done < limit) { fail[0] = 1; return done + 1; }
            return done;
        });
        return fail[0] == 1;
    }

    private Properties readControl() {
        Properties p = new Properties();
        Path f = controlFile;
        if (f == null) return p;
        try {
            String content = Files.readString(f);
            synchronized (this) {
                if (!content.equals(lastControlContent)) {
                    lastControlContent = content;
                    injected.clear();
                }
            }
            try (Reader r = new java.io.StringReader(content)) {
                p.load(r);
            }
        } catch (NoSuchFileException e) {
            // No file: no failures.
        } catch (IOException e) {
            log("cannot read control file %s: %s", f, e);
        }
        return p;
    }

    private static void log(String fmt, Object... args) {
        System.err.printf("[topology-plugin] " + fmt + "%n", args);
    }
}
