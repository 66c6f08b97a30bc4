import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * .ci/publish's checks of a deployed repository, as Maven Central's would see it: exactly the published
 * modules, each with its jar, sources, Javadoc and SBOM, and a pom that names and describes itself and
 * (itself or through idemtx-parent) gives the URL, licence, SCM and developers; the BOM manages every
 * published jar at the version deployed.
 *
 * <p>Usage: {@code java .ci/PublishCheck.java <repository> <version> <jar modules...> -- <pom modules...>}
 */
public final class PublishCheck {

    private static final String GROUP = "io/github/idemtx";
    private static final List<String> problems = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        Path repo = Path.of(args[0]);
        String version = args[1];
        List<String> jars = new ArrayList<>();
        List<String> poms = new ArrayList<>();
        List<String> into = jars;
        for (int i = 2; i < args.length; i++) {
            if (args[i].equals("--")) {
                into = poms;
            } else {
                into.add(args[i]);
            }
        }
        Set<String> expected = new TreeSet<>(jars);
        expected.addAll(poms);
        Set<String> deployed = new TreeSet<>();
        try (Stream<Path> dirs = Files.list(repo.resolve(GROUP))) {
            dirs.forEach(d -> deployed.add(d.getFileName().toString()));
        }
        if (!deployed.equals(expected)) {
            problems.add("deployed " + deployed + ", expected exactly " + expected
                    + " (an unpublished module must set maven.deploy.skip; a new published one belongs in .ci/publish and the BOM)");
        }
        for (String a : jars) {
            Path pom = file(repo, a, version, ".pom");
            checkPom(repo, version, a, pom);
            Path jar = file(repo, a, version, ".jar");
            Path sources = file(repo, a, version, "-sources.jar");
            Path javadoc = file(repo, a, version, "-javadoc.jar");
            file(repo, a, version, "-cyclonedx.json");
            file(repo, a, version, "-cyclonedx.xml");
            boolean code = !a.endsWith("-starter"); // a starter is a pom of dependencies in a jar
            if (code && jar != null && !contains(jar, ".class")) {
                problems.add(a + ": its jar holds no class");
            }
            if (code && sources != null && !contains(sources, ".java")) {
                problems.add(a + ": its sources jar holds no source");
            }
            if (code && javadoc != null && !contains(javadoc, "index.html")) {
                problems.add(a + ": its Javadoc jar holds no index.html");
            }
        }
        for (String a : poms) {
            checkPom(repo, version, a, file(repo, a, version, ".pom"));
            file(repo, a, version, "-cyclonedx.json");
            file(repo, a, version, "-cyclonedx.xml");
        }
        Path bom = file(repo, "idemtx-bom", version, ".pom");
        if (bom != null) {
            Element root = parse(bom);
            Set<String> managed = new TreeSet<>();
            Element dm = child(root, "dependencyManagement");
            Element deps = dm == null ? null : child(dm, "dependencies");
            if (deps != null) {
                for (Element d : children(deps, "dependency")) {
                    String v = text(d, "version");
                    if (v != null && !v.equals(version) && !v.equals("${project.version}")) {
                        problems.add("idemtx-bom manages " + text(d, "artifactId") + " at " + v + ", not " + version);
                    }
                    managed.add(text(d, "artifactId"));
                }
            }
            if (!managed.equals(new TreeSet<>(jars))) {
                problems.add("idemtx-bom manages " + managed + ", the published jars are " + new TreeSet<>(jars));
            }
            if (child(root, "parent") != null) {
                problems.add("idemtx-bom has a parent: importing it would bring the parent's dependency management");
            }
        }
        if (!problems.isEmpty()) {
            problems.forEach(p -> System.err.println(".ci/publish: " + p));
            System.exit(1);
        }
        System.out.println(".ci/publish: " + expected.size() + " modules deployed at " + version
                + ", every file and pom field Maven Central asks for present");
    }

    /** The newest deployed file of an artifact with that suffix (a snapshot's are time-stamped), or null. */
    private static Path file(Path repo, String artifact, String version, String suffix) throws Exception {
        Path dir = repo.resolve(GROUP).resolve(artifact).resolve(version);
        String base = version.endsWith("-SNAPSHOT") ? version.substring(0, version.length() - 9) : version;
        List<Path> found = new ArrayList<>();
        if (Files.isDirectory(dir)) {
            try (Stream<Path> files = Files.list(dir)) {
                files.filter(f -> {
                            String n = f.getFileName().toString();
                            if (!n.startsWith(artifact + "-" + base) || !n.endsWith(suffix)) {
                                return false;
                            }
                            String middle = n.substring((artifact + "-" + base).length(), n.length() - suffix.length());
                            return middle.isEmpty() || middle.matches("-SNAPSHOT|-\\d{8}\\.\\d{6}-\\d+");
                        })
                        .forEach(found::add);
            }
        }
        if (found.isEmpty()) {
            problems.add(artifact + ": no " + suffix + " deployed in " + dir);
            return null;
        }
        Path newest = found.stream().max(Comparator.comparing(Path::toString)).orElseThrow();
        if (Files.size(newest) == 0) {
            problems.add(artifact + ": " + newest.getFileName() + " is empty");
        }
        return newest;
    }

    private static void checkPom(Path repo, String version, String artifact, Path pom) throws Exception {
        if (pom == null) {
            return;
        }
        Element root = parse(pom);
        for (String own : List.of("name", "description")) {
            if (blank(text(root, own))) {
                problems.add(artifact + ": its pom has no <" + own + "> of its own");
            }
        }
        Element parentPom = null;
        Element parent = child(root, "parent");
        if (parent != null) {
            String p = text(parent, "artifactId");
            Path pp = file(repo, p, text(parent, "version"), ".pom");
            if (pp == null) {
                problems.add(artifact + ": its parent " + p + " is not deployed");
            } else {
                parentPom = parse(pp);
            }
        }
        for (String[] field : new String[][] {
            {"url"}, {"licenses", "license", "name"}, {"scm", "url"}, {"scm", "connection"}, {"developers", "developer"}
        }) {
            if (!has(root, field) && (parentPom == null || !has(parentPom, field))) {
                problems.add(artifact + ": neither its pom nor its parent's has " + String.join("/", field));
            }
        }
    }

    private static boolean contains(Path jar, String suffix) throws Exception {
        try (JarFile j = new JarFile(jar.toFile())) {
            return j.stream().anyMatch(e -> e.getName().endsWith(suffix));
        }
    }

    private static boolean has(Element e, String[] path) {
        Element at = e;
        for (String p : path) {
            at = child(at, p);
            if (at == null) {
                return false;
            }
        }
        return !blank(at.getTextContent());
    }

    private static Element parse(Path pom) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        return f.newDocumentBuilder().parse(new File(pom.toString())).getDocumentElement();
    }

    private static Element child(Element e, String name) {
        for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element c && c.getTagName().equals(name)) {
                return c;
            }
        }
        return null;
    }

    private static List<Element> children(Element e, String name) {
        List<Element> all = new ArrayList<>();
        for (Node n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element c && c.getTagName().equals(name)) {
                all.add(c);
            }
        }
        return all;
    }

    private static String text(Element e, String name) {
        Element c = child(e, name);
        return c == null ? null : c.getTextContent().trim();
    }

    private static boolean blank(String s) {
        return s == null || s.isBlank();
    }
}
