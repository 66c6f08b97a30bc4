package io.github.idemtx.architecture;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMember;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.library.dependencies.SliceRule;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The rules, apart from the classes they are checked on: {@link ArchitectureTest} checks them on the
 * library's classes, {@link ArchitectureRulesBiteTest} on classes made to break them.
 */
final class ArchitectureRules {

    private ArchitectureRules() {}

    static final String CORE = "io.github.idemtx.core..";
    static final String HTTP = "io.github.idemtx.http..";
    static final String KEYS = "io.github.idemtx.keys..";
    static final String MESSAGING = "io.github.idemtx.messaging..";
    /** Exactly the package: {@code io.github.idemtx.db.testing} is the unpublished test support. */
    static final String DB = "io.github.idemtx.db";

    static final String JOOQ = "io.github.idemtx.jooq..";
    static final String MICROMETER = "io.github.idemtx.micrometer..";
    static final String SPRING = "io.github.idemtx.spring..";
    static final String OUTBOX_RABBITMQ = "io.github.idemtx.outbox.rabbitmq..";

    /**
     * The modules' direction (DESIGN.md): core &lt;- http, keys, messaging, db &lt;- jooq &lt;- micrometer, spring.
     * Core depends on no other module; http, keys and messaging on core alone; nothing depends on Spring.
     */
    static final ArchRule MODULES = layeredArchitecture()
            .consideringOnlyDependenciesInLayers()
            // ArchitectureTest.theLibraryIsThere checks that none is empty
            .withOptionalLayers(true)
            .layer("core")
            .definedBy(CORE)
            .layer("http")
            .definedBy(HTTP)
            .layer("keys")
            .definedBy(KEYS)
            .layer("messaging")
            .definedBy(MESSAGING)
            .layer("db")
            .definedBy(DB)
            .layer("jooq")
            .definedBy(JOOQ)
            .layer("micrometer")
            .definedBy(MICROMETER)
            .layer("spring")
            .definedBy(SPRING)
            .layer("outbox-rabbitmq")
            .definedBy(OUTBOX_RABBITMQ)
            .whereLayer("core")
            .mayNotAccessAnyLayer()
            .whereLayer("http")
            .mayOnlyAccessLayers("core")
            .whereLayer("keys")
            .mayOnlyAccessLayers("core")
            .whereLayer("messaging")
            .mayOnlyAccessLayers("core")
            .whereLayer("db")
            .mayOnlyAccessLayers("core")
            .whereLayer("jooq")
            .mayOnlyAccessLayers("core", "db")
            .whereLayer("micrometer")
            .mayOnlyAccessLayers("core")
            .whereLayer("spring")
            .mayOnlyAccessLayers("core", "http", "db", "jooq", "micrometer")
            .whereLayer("outbox-rabbitmq")
            .mayOnlyAccessLayers("core", "db", "jooq")
            .because("the modules depend one way: core <- http, keys, messaging, db <- jooq <- micrometer, spring");

    /**
     * Core's internal package is shared with the modules that module-info.java exports it to, and no
     * others: http and keys (JsonText), jooq (Listeners).
     */
    static final ArchRule CORE_INTERNAL = classes()
            .that()
            .resideInAPackage("io.github.idemtx.core.internal..")
            .should()
            .onlyHaveDependentClassesThat()
            .resideInAnyPackage(
                    "io.github.idemtx.core..",
                    "io.github.idemtx.http..",
                    "io.github.idemtx.keys..",
                    "io.github.idemtx.jooq..")
            .because("module-info.java exports io.github.idemtx.core.internal to http, keys and jooq only");

    /** Every other module's internal packages are its own (module-info.java exports none of them). */
    static final ArchRule HTTP_INTERNAL = classes()
            .that()
            .resideInAPackage("io.github.idemtx.http.internal..")
            .should()
            .onlyHaveDependentClassesThat()
            .resideInAnyPackage(HTTP)
            .because("an internal package is the implementation of its module, exported to no one");

    static final ArchRule KEYS_INTERNAL = classes()
            .that()
            .resideInAPackage("io.github.idemtx.keys.internal..")
            .should()
            .onlyHaveDependentClassesThat()
            .resideInAnyPackage(KEYS)
            .because("an internal package is the implementation of its module, exported to no one");

    static final ArchRule JOOQ_INTERNAL = classes()
            .that()
            .resideInAPackage("io.github.idemtx.jooq.internal..")
            .should()
            .onlyHaveDependentClassesThat()
            .resideInAnyPackage(JOOQ)
            .because("an internal package is the implementation of its module, exported to no one");

    /**
     * The API shows no implementation: a public or protected member of a public class outside the
     * internal packages has no internal type in its signature (field, parameter, return, throws,
     * supertype), so callers on the class path can never come to depend on one either.
     */
    static final ArchRule API_SIGNATURES_HIDE_INTERNALS = classes()
            .that()
            .resideOutsideOfPackage("..internal..")
            .and()
            .arePublic()
            .should(new ArchCondition<JavaClass>("show no ..internal.. type in their public signatures") {
                @Override
                public void check(JavaClass c, ConditionEvents events) {
                    Stream.concat(c.getRawSuperclass().stream(), c.getRawInterfaces().stream())
                            .filter(ArchitectureRules::isInternal)
                            .forEach(t -> events.add(SimpleConditionEvent.violated(
                                    c, c.getName() + " extends or implements " + t.getName())));
                    for (JavaMember m : c.getMembers()) {
                        if (!m.getModifiers().contains(JavaModifier.PUBLIC)
                                && !m.getModifiers().contains(JavaModifier.PROTECTED)) {
                            continue;
                        }
                        Set<JavaClass> types = new LinkedHashSet<>();
                        if (m instanceof JavaField f) {
                            types.add(f.getRawType());
                        } else if (m instanceof JavaCodeUnit u) {
                            types.add(u.getRawReturnType());
                            types.addAll(u.getRawParameterTypes());
                            types.addAll(u.getThrowsClause().getTypes());
                        }
                        types.stream()
                                .filter(ArchitectureRules::isInternal)
                                .forEach(t -> events.add(
                                        SimpleConditionEvent.violated(m, m.getFullName() + " shows " + t.getName())));
                    }
                }
            })
            .because("internal packages are not exported: an API that shows one cannot be used from outside");

    static boolean isInternal(JavaClass type) {
        JavaClass base = type.isArray() ? type.getBaseComponentType() : type;
        return base.getPackageName().startsWith("io.github.idemtx.")
                && (base.getPackageName().endsWith(".internal")
                        || base.getPackageName().contains(".internal."));
    }

    /**
     * No cycles between the library's packages, with two kinds of dependency left out: a module's
     * internal packages on its own API package (an implementation implements and takes the API's
     * types, while the API's front doors call the implementation: jooq and jooq.internal), and jOOQ's
     * generated classes among themselves (io.github.idemtx.jooq.internal.schema, cyclic by design).
     */
    static final ArchRule NO_PACKAGE_CYCLES = noCyclesBut("core", "http", "keys", "jooq");

    private static ArchRule noCyclesBut(String... modulesWithInternals) {
        SliceRule rule = slices().matching("io.github.idemtx.(**)").should().beFreeOfCycles();
        for (String m : modulesWithInternals) {
            rule = rule.ignoreDependency(
                    resideInAPackage("io.github.idemtx." + m + ".internal.."),
                    resideInAPackage("io.github.idemtx." + m));
        }
        String schema = "io.github.idemtx.jooq.internal.schema..";
        return rule.ignoreDependency(resideInAPackage(schema), resideInAPackage(schema));
    }

    // The engine's layers (issue 25): io.github.idemtx.jooq.internal.store (the claim table's statements,
    // states, digests), .tx (running a unit, ownership, the boundary verbs) and .flow (the claim flow and
    // the effect flow, in .flow itself or as .flow.claim and .flow.effect). Where a package does not exist
    // (yet) its rule has nothing to check and passes (allowEmptyShould); once a class is in it, it bites.

    static final String STORE = "io.github.idemtx.jooq.internal.store..";
    static final String TX = "io.github.idemtx.jooq.internal.tx..";
    static final String FLOW = "io.github.idemtx.jooq.internal.flow..";
    static final String CLAIM_FLOW = "io.github.idemtx.jooq.internal.flow.claim..";
    static final String EFFECT_FLOW = "io.github.idemtx.jooq.internal.flow.effect..";

    /** The store is the bottom: it knows nothing of transactions or flows. */
    static final ArchRule STORE_IS_THE_BOTTOM = noClasses()
            .that()
            .resideInAPackage(STORE)
            .should()
            .dependOnClassesThat()
            .resideInAnyPackage(TX, FLOW)
            .allowEmptyShould(true)
            .because("the engine's layers point down: flow -> tx -> store");

    /** The transaction layer runs units for the flows and never calls back into them. */
    static final ArchRule TX_BELOW_FLOWS = noClasses()
            .that()
            .resideInAPackage(TX)
            .should()
            .dependOnClassesThat()
            .resideInAPackage(FLOW)
            .allowEmptyShould(true)
            .because("the engine's layers point down: flow -> tx -> store");

    /** The claim flow and the effect flow share the layers below, never each other. */
    static final ArchRule CLAIM_FLOW_NOT_ON_EFFECT_FLOW = noClasses()
            .that()
            .resideInAPackage(CLAIM_FLOW)
            .should()
            .dependOnClassesThat()
            .resideInAPackage(EFFECT_FLOW)
            .allowEmptyShould(true)
            .because("flows never depend on each other sideways");

    static final ArchRule EFFECT_FLOW_NOT_ON_CLAIM_FLOW = noClasses()
            .that()
            .resideInAPackage(EFFECT_FLOW)
            .should()
            .dependOnClassesThat()
            .resideInAPackage(CLAIM_FLOW)
            .allowEmptyShould(true)
            .because("flows never depend on each other sideways");

    // The same for flows that share the package io.github.idemtx.jooq.internal.flow: ClaimFlow* and EffectFlow*
    // (with their nested classes) never use each other; what both need lives beside them or below.

    static final String CLAIM_FLOW_CLASS = "io\\.github\\.idemtx\\.jooq\\.internal\\.flow\\.ClaimFlow\\w*(\\$.*)?";
    static final String EFFECT_FLOW_CLASS = "io\\.github\\.idemtx\\.jooq\\.internal\\.flow\\.EffectFlow\\w*(\\$.*)?";

    static final ArchRule CLAIM_FLOW_CLASS_NOT_ON_EFFECT_FLOW = noClasses()
            .that()
            .haveNameMatching(CLAIM_FLOW_CLASS)
            .should()
            .dependOnClassesThat()
            .haveNameMatching(EFFECT_FLOW_CLASS)
            .allowEmptyShould(true)
            .because("flows never depend on each other sideways");

    static final ArchRule EFFECT_FLOW_CLASS_NOT_ON_CLAIM_FLOW = noClasses()
            .that()
            .haveNameMatching(EFFECT_FLOW_CLASS)
            .should()
            .dependOnClassesThat()
            .haveNameMatching(CLAIM_FLOW_CLASS)
            .allowEmptyShould(true)
            .because("flows never depend on each other sideways");
}
