package svc;

import java.nio.charset.StandardCharsets;

/**
 * A managed worker process for {@link WorkerTest}: runs {@link SvcWorker} against SVC_DAEMON_URL
 * (trusting the CA file named by SVC_TEST_CA), answers {@code result:<payload>}, and prints how it
 * stopped. SIGTERM (the daemon stopping the app) calls {@link SvcWorker#stop()}.
 */
public final class WorkerMain {
    private WorkerMain() {
    }

    public static void main(String[] args) throws Exception {
        SvcClient client = new SvcClient.Builder().baseURL(System.getenv("SVC_DAEMON_URL"))
                .caCert(System.getenv("SVC_TEST_CA")).build();
        SvcWorker worker = new SvcWorker(client);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            worker.stop();
            try {
                main.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        System.out.println("worker started");
        try {
            while (true) {
                byte[] task = worker.fetchTask();
                if (task == null) {
                    System.out.println("worker stopped: null");
                    return;
                }
                worker.sendTaskResult(("result:" + new String(task, StandardCharsets.UTF_8))
                        .getBytes(StandardCharsets.UTF_8));
            }
        } catch (ProcessSupersededException e) {
            System.out.println("worker failed: ProcessSupersededException");
        } catch (IllegalStateException e) {
            System.out.println("worker failed: IllegalStateException");
        }
    }
}
