package io.github.idemtx.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ConformanceDataTest {

    @Test
    void theCopiesInTestResourcesAreIdenticalToTheSharedOriginals() throws Exception {
        Path shared = sharedConformance();
        List<String> files = new ArrayList<>();
        ConformanceData.STRUCTURED_FIELD_FILES.forEach(f -> files.add("structured-field-tests/" + f));
        ConformanceData.RFC8785_FILES.forEach(f -> files.add("rfc8785/input/" + f));
        ConformanceData.RFC8785_FILES.forEach(f -> files.add("rfc8785/output/" + f));
        if (shared == null) {
            // a checkout without the shared folder beside it: the copies are all there is
            assertThat(files)
                    .allSatisfy(f -> assertThat(ConformanceData.bytes(f)).isNotEmpty());
            return;
        }
        for (String f : files) {
            assertThat(ConformanceData.bytes(f)).as(f).isEqualTo(Files.readAllBytes(shared.resolve(f)));
        }
    }

    /** shared/conformance beside the repository root, if there is one. */
    private static Path sharedConformance() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.exists(dir.resolve("mvnw"))) {
                Path shared = dir.resolveSibling("shared").resolve("conformance");
                return Files.isDirectory(shared) ? shared : null;
            }
        }
        return null;
    }
}
