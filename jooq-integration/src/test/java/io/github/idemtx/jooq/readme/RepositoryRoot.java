package io.github.idemtx.jooq.readme;

import java.nio.file.Files;
import java.nio.file.Path;

/** Where the repository is, for the tests that read its pages; no database (the unit run runs them). */
final class RepositoryRoot {

    private RepositoryRoot() {}

    /**
     * The directory holding README.md and this module: Maven's multi-module directory when it is
     * passed on, else the first ancestor of the working directory (the module's, under surefire)
     * that has both.
     */
    static Path find() {
        String maven = System.getProperty("maven.multiModuleProjectDirectory");
        if (maven != null && Files.isRegularFile(Path.of(maven, ReadmeExampleTest.SOURCE))) {
            return Path.of(maven);
        }
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("README.md"))
                    && Files.isRegularFile(dir.resolve(ReadmeExampleTest.SOURCE))) {
                return dir;
            }
        }
        throw new IllegalStateException("no README.md beside " + ReadmeExampleTest.SOURCE + " above "
                + Path.of("").toAbsolutePath());
    }
}
