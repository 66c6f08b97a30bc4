package io.github.idemtx.architecture;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The rules of {@link ArchitectureRules}, checked on the main classes of every library module. */
class ArchitectureTest {

    private static JavaClasses library;

    @BeforeAll
    static void importLibrary() {
        library = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(location -> !location.contains("/io/github/idemtx/db/testing/"))
                .importPackages("io.github.idemtx");
    }

    private static void check(ArchRule rule) {
        rule.check(library);
    }

    @Test
    void theLibraryIsThere() {
        for (String module : new String[] {
            "core", "http", "keys", "messaging", "db", "jooq", "micrometer", "spring", "outbox.rabbitmq"
        }) {
            org.assertj.core.api.Assertions.assertThat(library.containPackage("io.github.idemtx." + module))
                    .as("classes of io.github.idemtx.%s imported", module)
                    .isTrue();
        }
    }

    @Test
    void modulesDependOneWay() {
        check(ArchitectureRules.MODULES);
    }

    @Test
    void coreInternalIsSharedOnlyWithTheModulesItIsExportedTo() {
        check(ArchitectureRules.CORE_INTERNAL);
    }

    @Test
    void otherInternalPackagesAreTheirModulesOwn() {
        check(ArchitectureRules.HTTP_INTERNAL);
        check(ArchitectureRules.KEYS_INTERNAL);
        check(ArchitectureRules.JOOQ_INTERNAL);
    }

    @Test
    void apiSignaturesShowNoInternalType() {
        check(ArchitectureRules.API_SIGNATURES_HIDE_INTERNALS);
    }

    @Test
    void noCyclesBetweenPackages() {
        check(ArchitectureRules.NO_PACKAGE_CYCLES);
    }

    @Test
    void engineLayersPointDown() {
        check(ArchitectureRules.STORE_IS_THE_BOTTOM);
        check(ArchitectureRules.TX_BELOW_FLOWS);
    }

    @Test
    void flowsNeverDependOnEachOtherSideways() {
        check(ArchitectureRules.CLAIM_FLOW_NOT_ON_EFFECT_FLOW);
        check(ArchitectureRules.EFFECT_FLOW_NOT_ON_CLAIM_FLOW);
        check(ArchitectureRules.CLAIM_FLOW_CLASS_NOT_ON_EFFECT_FLOW);
        check(ArchitectureRules.EFFECT_FLOW_CLASS_NOT_ON_CLAIM_FLOW);
    }
}
