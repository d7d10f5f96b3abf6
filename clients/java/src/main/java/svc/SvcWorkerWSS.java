package svc;

/** {@link SvcWorker} over WSS (a session without a bearer may only fetch and answer its own tasks). */
public class SvcWorkerWSS extends SvcWorker {
    public SvcWorkerWSS(SvcClientWSS client) {
        super(client);
    }

    public SvcWorkerWSS(String host, int port) {
        super(new SvcClientWSS(host, port));
    }
}
