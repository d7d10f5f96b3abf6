package svc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** {@link SvcWorker} in a real managed process of a real daemon, with tasks sent through the library. */
class WorkerTest {
    @Test
    void aManagedJavaWorkerAnswersTasksAndStopsWithNullWhenTheAppStops() throws Exception {
        TestDaemon daemon = TestDaemon.shared();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        try (SvcClient c = daemon.tcpClient(daemon.admin())) {
            JSONObject app = new JSONObject().put("shell", true)
                    .put("command", "exec '" + java + "' -XX:TieredStopAtLevel=1 -cp '" + classpath + "' svc.WorkerMain")
                    .put("env", new JSONObject().put("SVC_TEST_CA", daemon.ca()));
            c.addApp("java-worker", app);
            assertEquals("result:hello", c.runTask("java-worker", "hello", 120));
            assertEquals("result:{\"n\":1}", c.runTask("java-worker", "{\"n\":1}", 60));
            c.disableApp("java-worker");
            String output = "";
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!output.contains("worker stopped") && System.nanoTime() < deadline) {
                SvcClient.AppOutput out = c.getAppOutput("java-worker", 0, 0, 0, null, 5);
                output = out.getOutput();
                if (out.getExitCode() != null && !output.contains("worker stopped")) {
                    break;
                }
            }
            assertTrue(output.contains("worker started"), output);
            assertTrue(output.contains("worker stopped: null"), "stop() makes fetchTask return null:\n" + output);
            c.deleteApp("java-worker");
        }
    }
}
