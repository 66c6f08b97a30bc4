package io.github.idemtx.ledger;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * A headless Chromium for a test class, driven by Selenium through a chromedriver installed on the
 * machine (Debian's {@code chromium} and {@code chromium-driver}; .ci/run installs them), never one
 * that Selenium Manager would download.
 *
 * <pre>{@code
 * @RegisterExtension static final HeadlessChromium BROWSER = new HeadlessChromium();
 * ... BROWSER.driver().get(url); BROWSER.waiting().until(...);
 * }</pre>
 *
 * <p>Where the browser or the driver is missing, the class's tests are skipped with a warning saying
 * what to install; under CI ({@code CI} set, as .ci/run runs) they fail instead, since there the
 * browser must be installed. {@value #CHROMIUM_ENV} and {@value #CHROMEDRIVER_ENV} name other
 * executables.
 */
final class HeadlessChromium implements BeforeAllCallback, AfterAllCallback {

    /** The environment variable that names the browser's executable. */
    static final String CHROMIUM_ENV = "IDEMTX_CHROMIUM";
    /** The environment variable that names chromedriver's executable. */
    static final String CHROMEDRIVER_ENV = "IDEMTX_CHROMEDRIVER";

    private static final List<String> CHROMIUMS = List.of("/usr/bin/chromium", "/usr/bin/chromium-browser");
    private static final List<String> DRIVERS = List.of(
            "/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver", "/usr/lib/chromium-browser/chromedriver");

    // Selenium warns on every start that it has no DevTools module for this Chromium's version: no test uses CDP
    private static final java.util.logging.Logger DEVTOOLS_LOG = quiet("org.openqa.selenium.devtools");

    private ChromeDriver driver;

    private static java.util.logging.Logger quiet(String name) {
        java.util.logging.Logger logger = java.util.logging.Logger.getLogger(name);
        logger.setLevel(java.util.logging.Level.SEVERE);
        return logger;
    }

    /** {@return the browser of the running test class} */
    ChromeDriver driver() {
        if (driver == null) {
            throw new IllegalStateException("the browser starts before the test class's @BeforeAll methods;"
                    + " register HeadlessChromium as a static @RegisterExtension field");
        }
        return driver;
    }

    /** {@return an explicit wait with a generous timeout (slow CI machines), polling every 100 ms} */
    WebDriverWait waiting() {
        return new WebDriverWait(driver(), Duration.ofSeconds(30), Duration.ofMillis(100));
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        assumeAvailable();
        ChromeOptions options = new ChromeOptions();
        options.setBinary(chromium().orElseThrow().toString());
        options.addArguments(
                "--headless=new",
                "--no-sandbox",
                "--disable-dev-shm-usage",
                "--disable-gpu",
                "--disable-extensions",
                "--no-first-run",
                "--window-size=1400,1000");
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(chromedriver().orElseThrow().toFile())
                .usingAnyFreePort()
                .build();
        driver = new ChromeDriver(service, options);
        driver.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(60));
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (driver != null) {
            driver.quit();
            driver = null;
        }
    }

    /** Why no headless Chromium can run here, with what to install; empty when browser and driver are there. */
    static Optional<String> unavailable() {
        List<String> missing = new ArrayList<>();
        if (chromium().isEmpty()) {
            missing.add("no Chromium (looked at " + CHROMIUM_ENV + ", " + String.join(", ", CHROMIUMS)
                    + " and chromium on the PATH)");
        }
        if (chromedriver().isEmpty()) {
            missing.add("no chromedriver (looked at " + CHROMEDRIVER_ENV + ", " + String.join(", ", DRIVERS)
                    + " and chromedriver on the PATH)");
        }
        return missing.isEmpty()
                ? Optional.empty()
                : Optional.of(String.join("; ", missing)
                        + ": install them (apt-get install chromium chromium-driver) or name them in " + CHROMIUM_ENV
                        + " and " + CHROMEDRIVER_ENV);
    }

    /**
     * Skips the calling test, with a warning saying what to install, where no headless Chromium can run;
     * under CI ({@code CI} set) fails instead, since there the browser tests must run.
     */
    static void assumeAvailable() {
        Optional<String> why = unavailable();
        if (why.isEmpty()) {
            return;
        }
        if (System.getenv("CI") != null) {
            throw new IllegalStateException("CI runs the browser tests, but " + why.get());
        }
        System.err.println("WARNING skipped: " + why.get());
        Assumptions.abort("skipped: " + why.get());
    }

    static Optional<Path> chromium() {
        return executable(CHROMIUM_ENV, CHROMIUMS, "chromium");
    }

    static Optional<Path> chromedriver() {
        return executable(CHROMEDRIVER_ENV, DRIVERS, "chromedriver");
    }

    private static Optional<Path> executable(String env, List<String> candidates, String onPath) {
        String named = System.getenv(env);
        if (named != null && !named.isBlank()) {
            Path p = Path.of(named.trim());
            return Files.isRegularFile(p) && Files.isExecutable(p) ? Optional.of(p) : Optional.empty();
        }
        List<Path> all = new ArrayList<>();
        candidates.forEach(c -> all.add(Path.of(c)));
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(java.io.File.pathSeparator)) {
                if (!dir.isBlank()) {
                    all.add(Path.of(dir, onPath));
                }
            }
        }
        return all.stream()
                .filter(p -> Files.isRegularFile(p) && Files.isExecutable(p))
                .findFirst();
    }
}
