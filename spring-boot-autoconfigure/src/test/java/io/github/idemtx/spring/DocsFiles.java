package io.github.idemtx.spring;

import java.nio.file.Files;
import java.nio.file.Path;

/** Where this module's tests find the repository's docs and the sources they quote. */
public final class DocsFiles {

    private DocsFiles() {}

    /**
     * The directory holding {@code page} and {@code sources}: Maven's project directory, or the first
     * ancestor of the working directory with both.
     */
    public static Path repositoryRoot(String page, String sources) {
        String maven = System.getProperty("maven.multiModuleProjectDirectory");
        if (maven != null && Files.isRegularFile(Path.of(maven, page))) {
            return Path.of(maven);
        }
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve(page)) && Files.isDirectory(dir.resolve(sources))) {
                return dir;
            }
        }
        throw new IllegalStateException(
                "no " + page + " beside " + sources + " above " + Path.of("").toAbsolutePath());
    }

    /** {@code text} with Unix line ends, ending in one. */
    public static String normalized(String text) {
        String unix = text.replace("\r\n", "\n");
        return unix.endsWith("\n") ? unix : unix + "\n";
    }
}
