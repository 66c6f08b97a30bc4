package io.github.idemtx.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * The API gate (docs/contributing.md, "Versions and the API"): the public API of every published
 * module is committed as {@code <module>/api/<artifactId>.api}, and {@code verify} fails when the code's
 * API differs from it. A change meant to be made is written with {@code -Didemtx.api.update=true}
 * (which rewrites the listings) and said in CHANGELOG.md in the same commit, which
 * {@link #everyCommitThatChangesTheApiSaysSoInTheChangelog} checks.
 */
class PublicApiTest {

    /** The commit that began the gate: commits after it that change a listing change CHANGELOG.md too. */
    static final String GATE_BEGAN = "4d9bbee59e8dc1bdb2c64a5fa19def8179e642e4";

    static final List<PublicApi> MODULES = PublicApi.MODULES;

    @ParameterizedTest(name = "{0}")
    @FieldSource("MODULES")
    void theApiIsTheCommittedOne(PublicApi module) throws IOException {
        Path listing = Repository.root().resolve(module.listing());
        String actual = module.render();
        if (Boolean.getBoolean("idemtx.api.update")) {
            Files.createDirectories(listing.getParent());
            Files.writeString(listing, actual, StandardCharsets.UTF_8);
        }
        assertThat(listing)
                .as("%s: no API listing; write it with -Didemtx.api.update=true", module.listing())
                .exists();
        String committed = Files.readString(listing, StandardCharsets.UTF_8);
        if (!committed.equals(actual)) {
            throw new AssertionError(module.artifactId() + "'s public API differs from " + module.listing() + ":\n"
                    + difference(committed, actual)
                    + "\nIf the change is meant: ./mvnw -B -pl architecture-tests -am verify -Didemtx.api.update=true"
                    + " rewrites the listing; commit it with a line in CHANGELOG.md saying what users meet"
                    + " (a removal or an incompatible change waits for the next major version: docs/contributing.md).");
        }
    }

    /**
     * A listing changed since the last commit (in the working tree) goes with a changed CHANGELOG.md, and
     * so does every commit since the gate began that changed one.
     */
    @Test
    void everyCommitThatChangesTheApiSaysSoInTheChangelog() throws Exception {
        Path root = Repository.root();
        if (!Files.exists(root.resolve(".git"))) {
            assertThat(System.getenv("CI"))
                    .as("under CI the build runs in a git clone, where the changelog rule can be checked")
                    .isNull();
            return; // a source tree without history: nothing to check the rule against
        }
        List<String> problems = new ArrayList<>();
        List<String> changedNow = git(root, "diff", "HEAD", "--name-only");
        if (changedNow.stream().anyMatch(PublicApiTest::isListing) && !changedNow.contains("CHANGELOG.md")) {
            problems.add("the working tree changes "
                    + changedNow.stream().filter(PublicApiTest::isListing).toList() + " but not CHANGELOG.md");
        }
        if (git(root, "cat-file", "-t", GATE_BEGAN).equals(List.of("commit"))) {
            for (String commit : git(root, "rev-list", "--no-merges", GATE_BEGAN + "..HEAD")) {
                List<String> files = git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", commit);
                if (files.stream().anyMatch(PublicApiTest::isListing) && !files.contains("CHANGELOG.md")) {
                    problems.add("commit " + commit.substring(0, 10) + " changes "
                            + files.stream().filter(PublicApiTest::isListing).toList() + " but not CHANGELOG.md");
                }
            }
        } else if (!git(root, "rev-parse", "--is-shallow-repository").equals(List.of("true"))) {
            // a shallow clone may not reach back to it (as .ci/commit-subjects allows); a full one must
            assertThat(System.getenv("CI"))
                    .as("under CI a full clone holds the commit that began the gate, %s", GATE_BEGAN)
                    .isNull();
        }
        assertThat(problems)
                .as("every change to the public API is said in CHANGELOG.md in the same commit")
                .isEmpty();
    }

    @Test
    void everyPublishedModuleHasAListingAndNothingElseDoes() throws IOException {
        Set<Path> expected = new LinkedHashSet<>();
        MODULES.forEach(m -> expected.add(m.listing()));
        Set<Path> found = new LinkedHashSet<>();
        Path root = Repository.root();
        try (var dirs = Files.list(root)) {
            for (Path dir : dirs.toList()) {
                Path api = dir.resolve("api");
                if (Files.isDirectory(api)) {
                    try (var files = Files.list(api)) {
                        files.forEach(f -> found.add(root.relativize(f)));
                    }
                }
            }
        }
        assertThat(found).containsExactlyInAnyOrderElementsOf(expected);
    }

    private static boolean isListing(String path) {
        return path.matches("[^/]+/api/[^/]+\\.api");
    }

    /** The lines only one side has, marked - (committed) and + (the code's). */
    static String difference(String committed, String actual) {
        List<String> was = committed.lines().toList();
        List<String> is = actual.lines().toList();
        StringBuilder s = new StringBuilder();
        String type = "";
        Set<String> wasSet = new LinkedHashSet<>(was);
        Set<String> isSet = new LinkedHashSet<>(is);
        for (String line : was) {
            if (!line.startsWith(" ")) {
                type = line;
            }
            if (!isSet.contains(line)) {
                s.append("- ")
                        .append(line.startsWith(" ") ? type + " :: " + line.strip() : line)
                        .append('\n');
            }
        }
        for (String line : is) {
            if (!line.startsWith(" ")) {
                type = line;
            }
            if (!wasSet.contains(line)) {
                s.append("+ ")
                        .append(line.startsWith(" ") ? type + " :: " + line.strip() : line)
                        .append('\n');
            }
        }
        return s.length() == 0 ? "(the same lines in another order)\n" : s.toString();
    }

    private static List<String> git(Path root, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("git", "-C", root.toString()));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.getErrorStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("git " + String.join(" ", args) + " did not end within 60 s");
        }
        return out.lines().filter(l -> !l.isBlank()).toList();
    }
}
