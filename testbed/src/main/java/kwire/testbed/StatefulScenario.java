package kwire.testbed;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Scenario "stateful": a stateful Kafka Streams 4.4.0 app (group.protocol=streams) run
 * as two instances -- two KafkaStreams objects in this JVM, each with its own state
 * directory and so its own process id.
 *
 * <p>Topology: clicks (user -> page id) joined with the global table "pages" (a global
 * store, page id -> title), re-keyed by title with groupBy (a repartition topic), counted
 * into the persistent store "clicks-per-page" (a changelog topic), written to page-counts.
 * Two sub-topologies, two partitions each: tasks 0_0, 0_1 (stateless) and 1_0, 1_1
 * (stateful).
 *
 * <p>Group settings (IncrementalAlterConfigs on the GROUP resource, before the first
 * member joins): streams.num.standby.replicas=1 (with the streams protocol the broker
 * decides; the client's own num.standby.replicas=1 is set too but ignored, as the client
 * warns), streams.acceptable.recovery.lag=10 (sent back in every heartbeat response) and
 * streams.task.offset.interval.ms=1000 (members report task offsets every second; the
 * broker's floor is lowered by the scenario script).
 *
 * <p>Warm-up tasks: Kafka 4.4.0 never assigns any. Its streams TaskAssignor API can only
 * return active and standby tasks, and the step that would turn some of them into
 * warm-ups (AssignmentRefiner.refine in kafka-group-coordinator-4.4.0.jar) returns the
 * target assignment unchanged; the 4.4.0 client also warns that warm-up replicas are not
 * supported with the streams protocol. So WarmupTasks stay empty on the wire.
 *
 * <p>Sequence: a starts and processes clicks alone (all four actives, no standby
 * possible); b joins (member epochs move: b's target takes one task of each
 * sub-topology from a, and each instance gets a standby of a stateful task the other
 * runs); more clicks; b closes and leaves (a takes all actives back, standbys go); a
 * closes. The group is described (with its topology description) every 2 s while tasks
 * move.
 *
 * <p>args: bootstrap state-dir=DIR [app-id=stateful-app]
 */
public final class StatefulScenario {
    static final String CLICKS = "clicks";
    static final String PAGES = "pages";
    static final String OUTPUT = "page-counts";
    static final int PAGE_COUNT = 12;

    static Topology topology() {
        StreamsBuilder b = new StreamsBuilder();
        GlobalKTable<String, String> pages = b.globalTable(PAGES,
            Consumed.with(Serdes.String(), Serdes.String()), Materialized.as("pages-global-store"));
        b.stream(CLICKS, Consumed.with(Serdes.String(), Serdes.String()))
            .join(pages, (user, pageId) -> pageId, (pageId, title) -> title)
            .groupBy((user, title) -> title, Grouped.with("by-title", Serdes.String(), Serdes.String()))
            .count(Materialized.as("clicks-per-page"))
            .toStream()
            .mapValues(Object::toString)
            .to(OUTPUT, Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        String appId = opt.getOrDefault("app-id", "stateful-app");
        Path stateRoot = Files.createDirectories(Path.of(opt.get("state-dir")));
        Common.log("topology:%n%s", topology().describe());

        try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-stateful-admin"))) {
            ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, appId);
            Collection<AlterConfigOp> ops = List.of(
                set("streams.num.standby.replicas", "1"),
                set("streams.acceptable.recovery.lag", "10"),
                set("streams.task.offset.interval.ms", "1000"));
            admin.incrementalAlterConfigs(Map.of(group, ops)).all().get(30, TimeUnit.SECONDS);
            Common.log("group configs of %s: %s", appId, ops);

            List<String[]> pages = new ArrayList<>();
            for (int p = 0; p < PAGE_COUNT; p++) pages.add(new String[] {"page-" + p, "Title " + p});
            Common.produce(bootstrap, "kwire-pages-producer", PAGES, pages);
            Common.log("produced %d pages to the global table topic %s", pages.size(), PAGES);

            // One Topology object per KafkaStreams: a shared one would share the global store.
            KafkaStreams a = start(bootstrap, appId, stateRoot.resolve("a"), "stateful-app-a", topology());
            try {
                Common.awaitState(a, KafkaStreams.State.RUNNING, 90);
                produceClicks(bootstrap, 0, 300);
                awaitOutput(bootstrap, 300);
                awaitGroup(admin, appId, "a alone", 1, d -> true, 30);

                KafkaStreams b = start(bootstrap, appId, stateRoot.resolve("b"), "stateful-app-b", topology());
                try {
                    Common.awaitState(b, KafkaStreams.State.RUNNING, 90);
                    // Reconciled: both members own actives and a standby.
                    awaitGroup(admin, appId, "a and b", 2, d -> d.members().stream().allMatch(m ->
                        !m.assignment().activeTasks().isEmpty() && !m.assignment().standbyTasks().isEmpty()), 90);
                    produceClicks(bootstrap, 300, 100);
                    awaitOutput(bootstrap, 400);
                    Common.log("both instances run; staying 6 s for heartbeat rounds (task offsets every second)");
                    Thread.sleep(6000);
                    Common.log("closing instance b (it leaves the group)");
                    if (!b.close(Duration.ofSeconds(30))) throw new IllegalStateException("b did not close");
                } finally {
                    b.close(Duration.ofSeconds(5));
                }
                awaitGroup(admin, appId, "a after b left", 1, d -> true, 60);
                produceClicks(bootstrap, 400, 20);
                awaitOutput(bootstrap, 420);
                Common.log("closing instance a");
                if (!a.close(Duration.ofSeconds(30))) throw new IllegalStateException("a did not close");
            } finally {
                a.close(Duration.ofSeconds(5));
            }
            Common.logDescription("final describe", Common.describe(admin, appId, true));
        } finally {
            Common.deleteTree(stateRoot);
        }
    }

    private static AlterConfigOp set(String name, String value) {
        return new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET);
    }

    private static KafkaStreams start(String bootstrap, String appId, Path stateDir, String clientId,
                                      Topology topology) throws Exception {
        Properties sp = Common.streamsProps(bootstrap, appId, Files.createDirectories(stateDir));
        sp.put(StreamsConfig.CLIENT_ID_CONFIG, clientId);
        sp.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, "1");
        // Every update reaches the changelog and the output at once (no record cache).
        sp.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        KafkaStreams s = new KafkaStreams(topology, sp);
        s.setStateListener((now, before) -> Common.log("%s state %s -> %s", clientId, before, now));
        s.start();
        Common.log("%s started (state dir %s)", clientId, stateDir);
        return s;
    }

    private static void produceClicks(String bootstrap, int from, int count) throws Exception {
        List<String[]> clicks = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            clicks.add(new String[] {"user-" + (i % 17), "page-" + ((i * 7) % PAGE_COUNT)});
        }
        Common.produce(bootstrap, "kwire-clicks-producer", CLICKS, clicks);
        Common.log("produced clicks %d..%d", from, from + count - 1);
    }

    /** Waits until page-counts holds at least n count updates (one per click, no cache). */
    private static void awaitOutput(String bootstrap, int n) {
        List<String> seen = Common.readAll(bootstrap, "kwire-page-counts-reader", OUTPUT, 2, kv -> true, n, 60);
        Common.log("page-counts holds %d updates (waited for %d)", seen.size(), n);
        if (seen.size() < n) throw new IllegalStateException("output incomplete: " + seen.size() + " < " + n);
    }

    /**
     * Describes the group every 2 s, logging each change of the assignment, until it is
     * Stable with {@code members} members at the group epoch and {@code done} holds.
     */
    private static void awaitGroup(Admin admin, String appId, String what, int members,
                                   Predicate<StreamsGroupDescription> done, int seconds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        String last = "";
        while (true) {
            StreamsGroupDescription d = Common.describe(admin, appId, true);
            StringBuilder key = new StringBuilder(d.groupState() + "/" + d.groupEpoch());
            for (StreamsGroupMemberDescription m : d.members()) {
                key.append(' ').append(m.memberEpoch()).append(Common.tasks(m.assignment()))
                    .append(Common.tasks(m.targetAssignment()));
            }
            if (!key.toString().equals(last)) {
                Common.logDescription("describe (" + what + ")", d);
                last = key.toString();
            }
            boolean settled = d.groupState() == GroupState.STABLE && d.members().size() == members
                && d.members().stream().allMatch(m -> m.memberEpoch() == d.groupEpoch());
            if (settled && done.test(d)) return;
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("group " + appId + " did not settle (" + what + ") in " + seconds + " s");
            }
            Thread.sleep(2000);
        }
    }
}
