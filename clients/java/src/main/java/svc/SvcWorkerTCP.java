package svc;

/** {@link SvcWorker} over the TCP API. */
public class SvcWorkerTCP extends SvcWorker {
    public SvcWorkerTCP(SvcClientTCP client) {
        super(client);
    }

    public SvcWorkerTCP(String host, int port) {
        super(new SvcClientTCP(host, port));
    }
}
