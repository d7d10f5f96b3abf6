package svc;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import org.json.JSONArray;
import org.json.JSONObject;

/** The repository's spec/ folder, read as data (system property svc.repo.root, set by the pom). */
final class Spec {
    private Spec() {
    }

    static Path root() {
        String root = System.getProperty("svc.repo.root");
        Path p = root != null ? Paths.get(root) : Paths.get("../..");
        return p.toAbsolutePath().normalize();
    }

    static String read(String relative) {
        try {
            return Files.readString(root().resolve(relative), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + relative + " under " + root(), e);
        }
    }

    static JSONObject object(String relative) {
        return new JSONObject(read(relative));
    }

    static JSONArray array(String relative) {
        return new JSONArray(read(relative));
    }

    static byte[] hex(String hex) {
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder();
        for (byte b : bytes) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }
}
