package io.github.idemtx.db.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Marks a test class that needs the {@link TestDatabase}. The database is resolved before the class
 * runs; when there is none, the first such class of the test JVM fails with the one message that
 * says why and how to provide one, and every later one is skipped, pointing at it: a run without a
 * database ends with one clear error in Maven's summary, not one per class.
 *
 * <p>Such a class carries the tag {@value #TAG}: {@code -DexcludedGroups=database} (the {@code unit}
 * profile, docs/contributing.md) leaves every one out, and there {@link TestDatabase#get()} refuses to
 * start, naming the class that forgot the annotation.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Tag(DatabaseTest.TAG)
@ExtendWith(DatabaseTest.Condition.class)
public @interface DatabaseTest {

    /** The JUnit tag of every database test class. */
    String TAG = "database";

    /** Resolves the database before the class; skips the class once the failure was reported. */
    final class Condition implements ExecutionCondition, BeforeAllCallback {

        /** The reason a class is skipped once the database failed, for other test engines' hooks too. */
        public static final String SKIPPED = "no PostgreSQL for the database tests: the first database test class of"
                + " this run failed with the reason";

        /**
         * Set once a class of this engine failed with the reason: only then are the others skipped,
         * so that a run whose other engines (jqwik) met the failure first still reports it once.
         */
        private static volatile boolean reported;

        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            return reported
                    ? ConditionEvaluationResult.disabled(SKIPPED)
                    : ConditionEvaluationResult.enabled("the database is there, or not tried yet");
        }

        @Override
        public void beforeAll(ExtensionContext context) {
            try {
                TestDatabase.get();
            } catch (RuntimeException e) {
                reported = true;
                throw e;
            }
        }
    }
}
