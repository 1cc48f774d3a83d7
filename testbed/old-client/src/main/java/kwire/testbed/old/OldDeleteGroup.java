package kwire.testbed.old;

import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;

/** deleteStreamsGroups from the 4.3.1 Admin client (DeleteGroups v2). args: bootstrap group */
public final class OldDeleteGroup {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("client.id", "kwire-admin-43");
        try (Admin admin = Admin.create(p)) {
            admin.deleteStreamsGroups(List.of(args[1])).all().get(30, TimeUnit.SECONDS);
            System.out.println("deleteStreamsGroups (4.3.1 Admin): " + args[1] + " deleted");
        }
    }
}
