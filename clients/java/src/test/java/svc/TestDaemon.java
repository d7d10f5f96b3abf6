package svc;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.json.JSONArray;
import org.json.JSONObject;

/**
 * A real svcd from the test daemon command (spec/testkit.md): {@code SVC_TESTKIT_COMMAND}, a JSON
 * array, started with a pipe as stdin; its one JSON line says where it listens. Closing stdin stops
 * it (and the pipe closes with this JVM, so nothing outlives the suite). One shared daemon serves the
 * suite; scenarios that kill their daemon start one of their own.
 */
final class TestDaemon implements AutoCloseable {
    private static TestDaemon shared;

    final JSONObject info;
    private final Process process;
    private final File log;

    private TestDaemon(Process process, JSONObject info, File log) {
        this.process = process;
        this.info = info;
        this.log = log;
    }

    /** The suite's daemon, started on first use and stopped when the JVM exits. */
    static synchronized TestDaemon shared() throws IOException {
        if (shared == null) {
            shared = start();
            TestDaemon d = shared;
            Runtime.getRuntime().addShutdownHook(new Thread(d::close));
        }
        return shared;
    }

    static TestDaemon start() throws IOException {
        String command = System.getenv("SVC_TESTKIT_COMMAND");
        if (command == null || command.isEmpty()) {
            throw new IllegalStateException("SVC_TESTKIT_COMMAND is not set: run the suite with "
                    + "`npx vitest run clients/java/java-client.test.ts` (or see clients/java/README.md)");
        }
        List<String> argv = new ArrayList<>();
        JSONArray parts = new JSONArray(command);
        for (int i = 0; i < parts.length(); i++) {
            argv.add(parts.getString(i));
        }
        File log = File.createTempFile("svc-testkit-", ".log");
        log.deleteOnExit();
        Process p = new ProcessBuilder(argv).redirectError(ProcessBuilder.Redirect.to(log)).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            try {
                return out.readLine();
            } catch (IOException e) {
                return null;
            }
        });
        String first;
        try {
            first = line.get(120, TimeUnit.SECONDS);
        } catch (Exception e) {
            first = null;
        }
        if (first == null || !first.startsWith("{")) {
            p.destroyForcibly();
            throw new IOException("the test daemon did not start: " + tail(log));
        }
        return new TestDaemon(p, new JSONObject(first), log);
    }

    private static String tail(File log) {
        try {
            String s = Files.readString(log.toPath());
            return s.length() > 4000 ? s.substring(s.length() - 4000) : s;
        } catch (IOException e) {
            return "(no log)";
        }
    }

    String token(String role) {
        return info.getJSONObject("tokens").getString(role);
    }

    String admin() {
        return token("svc-admin");
    }

    String principal(String role) {
        return info.getJSONObject("principals").getString(role);
    }

    String ca() {
        return info.getString("ca");
    }

    String rest() {
        return info.getString("rest");
    }

    int restPort() {
        return info.getJSONObject("ports").getInt("rest");
    }

    int tcpPort() {
        return info.getJSONObject("ports").getInt("tcp");
    }

    String home() {
        return info.getString("home");
    }

    SvcClient restClient(String token) {
        return new SvcClient.Builder().baseURL(rest()).caCert(ca()).jwtToken(token).build();
    }

    SvcClientTCP tcpClient(String token) {
        return new SvcClientTCP.Builder().host("127.0.0.1").port(tcpPort()).caCert(ca()).jwtToken(token).build();
    }

    SvcClientWSS wssClient(String token) {
        return new SvcClientWSS.Builder().host("127.0.0.1").port(restPort()).caCert(ca()).jwtToken(token).build();
    }

    SvcClient client(String transport, String token) {
        switch (transport) {
            case "rest":
                return restClient(token);
            case "tcp":
                return tcpClient(token);
            case "wss":
                return wssClient(token);
            default:
                throw new IllegalArgumentException(transport);
        }
    }

    /** SIGKILL svcd itself (not the testkit wrapper): the connections drop at once. */
    void killDaemon() {
        ProcessHandle.of(info.getLong("pid")).ifPresent(ProcessHandle::destroyForcibly);
    }

    @Override
    public void close() {
        try {
            process.getOutputStream().close();
        } catch (IOException e) {
            // already closed
        }
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        log.delete();
    }
}
