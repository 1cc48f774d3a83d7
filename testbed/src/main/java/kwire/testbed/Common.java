package kwire.testbed;

import java.util.Properties;

/** Small helpers shared by the testbed programs. */
final class Common {
    private Common() { }

    static final String SOURCE_TOPIC = "orders";
    static final String SINK_TOPIC = "valid-orders";
    static final String APPLICATION_ID = "orders-app";

    static String bootstrap(String[] args) {
        if (args.length < 1 || args[0].isBlank()) {
            throw new IllegalArgumentException("usage: <bootstrap host:port> [...]");
        }
        return args[0];
    }

    static Properties adminProps(String bootstrap, String clientId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId);
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "30000");
        return p;
    }

    static void log(String fmt, Object... args) {
        System.out.printf("[%s] %s%n", java.time.LocalTime.now().withNano(0), String.format(fmt, args));
        System.out.flush();
    }
}
