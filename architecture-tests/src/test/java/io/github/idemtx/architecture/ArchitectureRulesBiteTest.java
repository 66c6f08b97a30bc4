package io.github.idemtx.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import io.github.idemtx.core.CoreDependsOnHttp;
import io.github.idemtx.core.internal.CoreInternalFixture;
import io.github.idemtx.http.IdempotencyKeyHeader;
import io.github.idemtx.http.internal.HttpInternalFixture;
import io.github.idemtx.jooq.internal.JooqInternalFixture;
import io.github.idemtx.jooq.internal.flow.ClaimFlowFixture;
import io.github.idemtx.jooq.internal.flow.EffectFlowFixture;
import io.github.idemtx.jooq.internal.flow.claim.ClaimFlowReachesSideways;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlowReachesSideways;
import io.github.idemtx.jooq.internal.store.StoreBreaksTheLayers;
import io.github.idemtx.jooq.internal.tx.TxCallsAFlow;
import io.github.idemtx.keys.internal.KeysInternalFixture;
import io.github.idemtx.micrometer.MicrometerUsesCoreInternal;
import io.github.idemtx.spring.SpringUsesOthersInternals;
import org.junit.jupiter.api.Test;

/**
 * Each rule fails on a class written to break it (the fixtures beside this test), naming that class: a
 * rule that passes on the library proves something only if it can fail. The engine's layer rules pass
 * on the library today because their packages do not exist yet; here they bite.
 */
class ArchitectureRulesBiteTest {

    private static final JavaClasses FIXTURES = new ClassFileImporter()
            .importClasses(
                    CoreDependsOnHttp.class,
                    SpringUsesOthersInternals.class,
                    MicrometerUsesCoreInternal.class,
                    StoreBreaksTheLayers.class,
                    TxCallsAFlow.class,
                    ClaimFlowReachesSideways.class,
                    EffectFlowReachesSideways.class,
                    ClaimFlowFixture.class,
                    EffectFlowFixture.class,
                    // what they reach
                    IdempotencyKeyHeader.class,
                    CoreInternalFixture.class,
                    HttpInternalFixture.class,
                    KeysInternalFixture.class,
                    JooqInternalFixture.class);

    private static void bites(ArchRule rule, String culprit) {
        EvaluationResult result = rule.evaluate(FIXTURES);
        assertThat(result.hasViolation()).as(rule.getDescription()).isTrue();
        assertThat(String.join("\n", result.getFailureReport().getDetails()))
                .as(rule.getDescription())
                .contains(culprit);
    }

    @Test
    void coreDependingOnAnotherModule() {
        bites(ArchitectureRules.MODULES, "CoreDependsOnHttp");
    }

    @Test
    void coreInternalOutsideTheModulesItIsExportedTo() {
        bites(ArchitectureRules.CORE_INTERNAL, "MicrometerUsesCoreInternal");
    }

    @Test
    void anotherModulesInternals() {
        bites(ArchitectureRules.HTTP_INTERNAL, "SpringUsesOthersInternals");
        bites(ArchitectureRules.KEYS_INTERNAL, "SpringUsesOthersInternals");
        bites(ArchitectureRules.JOOQ_INTERNAL, "SpringUsesOthersInternals");
    }

    @Test
    void anApiShowingAnInternalType() {
        bites(ArchitectureRules.API_SIGNATURES_HIDE_INTERNALS, "SpringUsesOthersInternals.shows()");
    }

    @Test
    void aPackageCycle() {
        bites(ArchitectureRules.NO_PACKAGE_CYCLES, "ClaimFlowReachesSideways");
    }

    @Test
    void theStoreReachingUp() {
        bites(ArchitectureRules.STORE_IS_THE_BOTTOM, "StoreBreaksTheLayers");
    }

    @Test
    void theTransactionLayerReachingUp() {
        bites(ArchitectureRules.TX_BELOW_FLOWS, "TxCallsAFlow");
    }

    @Test
    void flowsReachingSideways() {
        bites(ArchitectureRules.CLAIM_FLOW_NOT_ON_EFFECT_FLOW, "ClaimFlowReachesSideways");
        bites(ArchitectureRules.EFFECT_FLOW_NOT_ON_CLAIM_FLOW, "EffectFlowReachesSideways");
        bites(ArchitectureRules.CLAIM_FLOW_CLASS_NOT_ON_EFFECT_FLOW, "ClaimFlowFixture");
        bites(ArchitectureRules.EFFECT_FLOW_CLASS_NOT_ON_CLAIM_FLOW, "EffectFlowFixture");
    }
}
