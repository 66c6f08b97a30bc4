package io.github.idemtx.architecture;

import java.nio.file.Files;
import java.nio.file.Path;

/** The repository these checks read: its root lies above the surefire working directory, this module's. */
final class Repository {

    private Repository() {}

    static Path root() {
        Path here = Path.of("").toAbsolutePath();
        for (Path p = here; p != null; p = p.getParent()) {
            if (Files.exists(p.resolve("architecture-tests")) && Files.exists(p.resolve("pom.xml"))) {
                return p;
            }
        }
        throw new IllegalStateException("no repository root above " + here);
    }
}
