package rmqctl.harness;

import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Runs one {@code mqadmin} sub-command ({@link MQAdminStartup}) and exits as soon as it returns.
 *
 * <p>Plain {@code MQAdminStartup.main} prints its result within about half a second, but the JVM then
 * lingers about three more seconds until the client's non-daemon threads wind down. The integration
 * tests call mqadmin many times, so this wrapper flushes the output and exits right away. Output and
 * arguments are exactly those of mqadmin.
 */
public final class AdminCli {

    private AdminCli() {
    }

    public static void main(String[] args) {
        int rc = 0;
        try {
            MQAdminStartup.main(args);
        } catch (Throwable t) {
            t.printStackTrace(System.err);
            rc = 1;
        }
        System.out.flush();
        System.err.flush();
        Runtime.getRuntime().halt(rc);
    }
}
