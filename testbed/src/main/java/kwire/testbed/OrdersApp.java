package kwire.testbed;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupTopologyDescriptionStatus;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The KIP-1331 appendix application: orders -> filter(non-empty value) -> valid-orders,
 * run with group.protocol=streams. It joins the streams group, waits for RUNNING,
 * produces a few records, checks the filtered output, stays up for a while so several
 * StreamsGroupHeartbeat rounds happen, describes the group while its member is live,
 * then closes cleanly (the member leaves the group).
 *
 * <p>args: bootstrap [key=value ...]
 * <ul>
 *   <li>app-id (orders-app): the application id, i.e. the streams group id;</li>
 *   <li>stay (12): seconds to stay up after the output check;</li>
 *   <li>state-dir: Streams state dir (default: a temp dir, removed at the end);</li>
 *   <li>variant (filter): "filter" is the appendix topology; "upper" adds a
 *       mapValues(toUpperCase) between filter and sink (new nodes, same sub-topology
 *       and topics, so the same StreamsGroupHeartbeat topology); "upper-store" also
 *       turns the stream into a table materialized in the store "latest-order" (a
 *       changelog topic: a different heartbeat topology);</li>
 *   <li>await-status: before staying, describe the group every 5 s until its
 *       topology description status is this (e.g. AVAILABLE), for up to await-seconds (120);</li>
 *   <li>expect (running): "fatal" means the app is expected to be rejected by the
 *       group coordinator (it must reach ERROR within 60 s; exit 0 then).</li>
 * </ul>
 */
public final class OrdersApp {

    static Topology topology(String variant) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> valid = b.stream(Common.SOURCE_TOPIC, Consumed.with(Serdes.String(), Serdes.String()))
            .filter((key, value) -> value != null && !value.isEmpty());
        switch (variant) {
            case "filter" -> { }
            case "upper" -> valid = valid.mapValues(v -> v.toUpperCase(java.util.Locale.ROOT));
            case "upper-store" -> valid = valid.mapValues(v -> v.toUpperCase(java.util.Locale.ROOT))
                .toTable(Named.as("latest-order-table"), Materialized.as("latest-order"))
                .toStream(Named.as("latest-order-stream"));
            default -> throw new IllegalArgumentException("unknown variant " + variant);
        }
        valid.to(Common.SINK_TOPIC, Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = Common.bootstrap(args);
        Map<String, String> opt = Common.options(args);
        String appId = opt.getOrDefault("app-id", Common.APPLICATION_ID);
        int staySeconds = Integer.parseInt(opt.getOrDefault("stay", "12"));
        String variant = opt.getOrDefault("variant", "filter");
        String expect = opt.getOrDefault("expect", "running");
        String awaitStatus = opt.get("await-status");
        int awaitSeconds = Integer.parseInt(opt.getOrDefault("await-seconds", "120"));
        Path stateDir = opt.containsKey("state-dir")
            ? Files.createDirectories(Path.of(opt.get("state-dir")))
            : Files.createTempDirectory("kwire-streams-state");

        Properties sp = Common.streamsProps(bootstrap, appId, stateDir);
        Topology topology = topology(variant);
        Common.log("%s (variant %s) topology:%n%s", appId, variant, topology.describe());

        CountDownLatch running = new CountDownLatch(1);
        AtomicReference<Throwable> fatal = new AtomicReference<>();
        try (KafkaStreams streams = new KafkaStreams(topology, sp)) {
            streams.setStateListener((now, before) -> {
                Common.log("streams state %s -> %s", before, now);
                if (now == KafkaStreams.State.RUNNING) running.countDown();
            });
            streams.setUncaughtExceptionHandler(e -> {
                fatal.compareAndSet(null, e);
                Common.log("streams fatal error: %s", e);
                return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            streams.start();

            if (expect.equals("fatal")) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (streams.state() != KafkaStreams.State.ERROR && System.nanoTime() < deadline) {
                    Thread.sleep(200);
                }
                if (streams.state() != KafkaStreams.State.ERROR) {
                    throw new IllegalStateException("expected the app to be rejected; state=" + streams.state());
                }
                Throwable e = fatal.get();
                while (e != null && e.getCause() != null && e.getCause() != e) e = e.getCause();
                Common.log("rejected as expected: %s", e);
                return;
            }

            if (!running.await(90, TimeUnit.SECONDS)) {
                throw new IllegalStateException("streams app did not reach RUNNING; state=" + streams.state(), fatal.get());
            }

            String tag = appId + "/" + variant;
            List<String> values = List.of("order-1:widget", "", "order-2:gadget", "", "order-3:gizmo", "order-4:doohickey");
            List<String[]> records = new ArrayList<>();
            int i = 0;
            for (String v : values) records.add(new String[] {"k" + (i++), v.isEmpty() ? v : v + "@" + tag});
            Common.produce(bootstrap, "kwire-orders-producer", Common.SOURCE_TOPIC, records);
            long expected = values.stream().filter(v -> !v.isEmpty()).count();
            Common.log("produced %d records to %s (%d non-empty)", values.size(), Common.SOURCE_TOPIC, expected);

            // Read the sink without a consumer group (assign + seek), so the only group
            // traffic in the capture is the streams group itself. Other runs may have
            // written to the topic before, so count only this run's records.
            String suffix = ("@" + tag).toLowerCase(java.util.Locale.ROOT);
            List<String> mine = Common.readAll(bootstrap, "kwire-valid-orders-reader", Common.SINK_TOPIC, 1,
                kv -> kv.toLowerCase(java.util.Locale.ROOT).endsWith(suffix), (int) expected, 30);
            Common.log("read %d records of this run from %s: %s", mine.size(), Common.SINK_TOPIC, mine);
            if (mine.size() < expected) {
                throw new IllegalStateException("expected " + expected + " filtered records, got " + mine.size());
            }

            try (Admin admin = Admin.create(Common.adminProps(bootstrap, "kwire-live-describer"))) {
                if (awaitStatus != null) {
                    StreamsGroupTopologyDescriptionStatus want = StreamsGroupTopologyDescriptionStatus.valueOf(awaitStatus);
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(awaitSeconds);
                    StreamsGroupTopologyDescriptionStatus seen;
                    while (true) {
                        seen = Common.describe(admin, appId, true).topologyDescriptionStatus();
                        Common.log("topology description status of %s: %s (waiting for %s)", appId, seen, want);
                        if (seen == want) break;
                        if (System.nanoTime() > until) {
                            throw new IllegalStateException("status " + want + " not reached in " + awaitSeconds + " s");
                        }
                        Thread.sleep(5000);
                    }
                }

                Common.log("staying up %d s for heartbeat rounds", staySeconds);
                Thread.sleep(TimeUnit.SECONDS.toMillis(staySeconds));

                StreamsGroupDescription d = admin.describeStreamsGroups(List.of(appId),
                        new DescribeStreamsGroupsOptions().includeTopologyDescription(true)
                            .includeAuthorizedOperations(true))
                    .all().get(30, TimeUnit.SECONDS).get(appId);
                Common.logDescription("live describe", d);
            }

            Common.log("closing streams app");
            if (!streams.close(Duration.ofSeconds(30))) {
                throw new IllegalStateException("streams did not close within 30 s");
            }
            Common.log("streams closed, state=%s", streams.state());
        } finally {
            Common.deleteTree(stateDir);
        }
    }
}
