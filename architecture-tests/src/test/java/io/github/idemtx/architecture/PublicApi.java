package io.github.idemtx.architecture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.module.ModuleDescriptor;
import java.lang.reflect.AnnotatedElement;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.net.URISyntaxException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The public API of one published module, as text: every public type of its API packages (the packages
 * its {@code module-info} exports to everyone; for a module without one, every package but
 * {@code .internal} ones), each with its supertypes, permitted subtypes and public or protected
 * members, sorted, one per line. What compiled code of a user can link against, so a change here is a
 * change users can notice. Committed as {@code <module>/api/<artifactId>.api} and compared by
 * {@link PublicApiTest}.
 */
record PublicApi(String directory, String artifactId, String anchorPackage) {

    /** Every published module with code: its directory, artifactId, and a package that anchors its classes. */
    static final List<PublicApi> MODULES = List.of(
            new PublicApi("core", "idemtx-core", "io.github.idemtx.core"),
            new PublicApi("http", "idemtx-http", "io.github.idemtx.http"),
            new PublicApi("keys", "idemtx-keys", "io.github.idemtx.keys"),
            new PublicApi("messaging", "idemtx-messaging", "io.github.idemtx.messaging"),
            new PublicApi("db", "idemtx-db", "io.github.idemtx.db"),
            new PublicApi("jooq-integration", "idemtx-jooq-integration", "io.github.idemtx.jooq"),
            new PublicApi("micrometer", "idemtx-micrometer", "io.github.idemtx.micrometer"),
            new PublicApi("outbox-rabbitmq", "idemtx-outbox-rabbitmq", "io.github.idemtx.outbox.rabbitmq"),
            new PublicApi("spring-boot-autoconfigure", "idemtx-spring-boot-autoconfigure", "io.github.idemtx.spring"));

    /** The committed listing, relative to the repository's root. */
    Path listing() {
        return Path.of(directory, "api", artifactId + ".api");
    }

    /** The listing of the classes on the class path, as it would be committed. */
    String render() {
        Path root = classesRoot();
        try (FileSystem jar = root.toString().endsWith(".jar") ? FileSystems.newFileSystem(root) : null) {
            Path base = jar == null ? root : jar.getPath("/");
            Set<String> exported = exportedPackages(base);
            StringBuilder out = new StringBuilder();
            out.append("# The public API of ")
                    .append(artifactId)
                    .append(" (PublicApiTest; docs/contributing.md, \"Versions and the API\")\n");
            for (String className : classNames(base)) {
                String pkg = className.substring(0, className.lastIndexOf('.'));
                if (!exported.contains(pkg)) {
                    continue;
                }
                Class<?> type = load(className);
                if (isApi(type)) {
                    out.append(describe(type));
                }
            }
            return out.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Path classesRoot() {
        try {
            Class<?> anchor = load(anchorPackage + ".package-info");
            return Path.of(
                    anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private Set<String> exportedPackages(Path base) throws IOException {
        Path moduleInfo = base.resolve("module-info.class");
        if (Files.exists(moduleInfo)) {
            try (var in = Files.newInputStream(moduleInfo)) {
                return ModuleDescriptor.read(in).exports().stream()
                        .filter(e -> !e.isQualified())
                        .map(ModuleDescriptor.Exports::source)
                        .collect(Collectors.toCollection(TreeSet::new));
            }
        }
        // an automatic module: every package of its own but the internal ones
        return classNames(base).stream()
                .map(n -> n.substring(0, n.lastIndexOf('.')))
                .filter(p -> p.startsWith(anchorPackage) && !p.matches(".*\\.internal(\\..*)?"))
                .collect(Collectors.toCollection(TreeSet::new));
    }

    private static List<String> classNames(Path base) throws IOException {
        try (Stream<Path> files = Files.walk(base)) {
            return files.map(f -> base.relativize(f).toString().replace('\\', '/'))
                    .filter(n ->
                            n.endsWith(".class") && !n.endsWith("module-info.class") && !n.contains("package-info"))
                    .map(n -> n.substring(0, n.length() - ".class".length()).replace('/', '.'))
                    .sorted()
                    .toList();
        }
    }

    private static Class<?> load(String name) {
        try {
            return Class.forName(name, false, PublicApi.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("the class path has no " + name, e);
        }
    }

    /** Public, and (if nested) inside public types all the way out; never synthetic or anonymous. */
    private static boolean isApi(Class<?> type) {
        if (type.isSynthetic() || type.isAnonymousClass() || type.isLocalClass()) {
            return false;
        }
        for (Class<?> t = type; t != null; t = t.getDeclaringClass()) {
            if (!Modifier.isPublic(t.getModifiers())) {
                return false;
            }
        }
        return true;
    }

    private static String describe(Class<?> type) {
        StringBuilder s = new StringBuilder("\n");
        s.append(deprecation(type)).append(typeHeader(type));
        Type superclass = type.getGenericSuperclass();
        if (superclass != null
                && superclass != Object.class
                && superclass != Record.class
                && !(type.isEnum() && superclass.getTypeName().startsWith("java.lang.Enum"))) {
            s.append(" extends ").append(superclass.getTypeName());
        }
        Type[] interfaces = type.getGenericInterfaces();
        if (interfaces.length > 0 && !type.isAnnotation()) {
            s.append(type.isInterface() ? " extends " : " implements ")
                    .append(Arrays.stream(interfaces)
                            .map(Type::getTypeName)
                            .sorted()
                            .collect(Collectors.joining(", ")));
        }
        Class<?>[] permitted = type.getPermittedSubclasses();
        if (permitted != null) {
            s.append(" permits ")
                    .append(Arrays.stream(permitted)
                            .map(Class::getName)
                            .sorted()
                            .collect(Collectors.joining(", ")));
        }
        s.append('\n');
        List<String> members = new ArrayList<>();
        for (Field f : type.getDeclaredFields()) {
            if (visible(f.getModifiers()) && !f.isSynthetic()) {
                members.add(deprecation(f) + modifiers(f.getModifiers())
                        + f.getGenericType().getTypeName() + " " + f.getName());
            }
        }
        for (Constructor<?> c : type.getDeclaredConstructors()) {
            if (visible(c.getModifiers()) && !c.isSynthetic()) {
                members.add(deprecation(c)
                        + modifiers(c.getModifiers())
                        + typeParameters(c.getTypeParameters())
                        + type.getSimpleName()
                        + parameters(c));
            }
        }
        for (Method m : type.getDeclaredMethods()) {
            if (visible(m.getModifiers()) && !m.isSynthetic() && !m.isBridge()) {
                int modifiers = m.getModifiers() & ~(type.isInterface() && !m.isDefault() ? Modifier.ABSTRACT : 0);
                members.add(deprecation(m) + (m.isDefault() ? "default " : "") + modifiers(modifiers)
                        + typeParameters(m.getTypeParameters())
                        + m.getGenericReturnType().getTypeName() + " "
                        + m.getName() + parameters(m)
                        + (m.getDefaultValue() != null ? " default" : ""));
            }
        }
        members.stream().sorted().forEach(m -> s.append("  ").append(m).append('\n'));
        return s.toString();
    }

    private static String typeHeader(Class<?> type) {
        int modifiers = type.getModifiers();
        String kind;
        if (type.isAnnotation()) {
            kind = "@interface";
            modifiers &= ~(Modifier.ABSTRACT | Modifier.INTERFACE);
        } else if (type.isInterface()) {
            kind = "interface";
            modifiers &= ~(Modifier.ABSTRACT | Modifier.INTERFACE);
        } else if (type.isEnum()) {
            kind = "enum";
            modifiers &= ~(Modifier.FINAL | Modifier.ABSTRACT);
        } else if (type.isRecord()) {
            kind = "record";
            modifiers &= ~Modifier.FINAL;
        } else {
            kind = "class";
        }
        String sealed = type.isSealed() ? "sealed " : "";
        boolean extendable = !Modifier.isFinal(type.getModifiers()) && !type.isRecord() && !type.isEnum();
        String nonSealed = !type.isSealed() && extendable && sealedSuper(type) ? "non-sealed " : "";
        return (modifiers(modifiers) + sealed + nonSealed + kind + " " + type.getName()
                        + typeParameters(type.getTypeParameters()))
                .strip();
    }

    private static boolean sealedSuper(Class<?> type) {
        if (type.getSuperclass() != null && type.getSuperclass().isSealed()) {
            return true;
        }
        return Arrays.stream(type.getInterfaces()).anyMatch(Class::isSealed);
    }

    private static boolean visible(int modifiers) {
        return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
    }

    private static String modifiers(int modifiers) {
        String s = Modifier.toString(modifiers
                & ~(Modifier.SYNCHRONIZED
                        | Modifier.NATIVE
                        | Modifier.STRICT
                        | Modifier.TRANSIENT
                        | Modifier.VOLATILE));
        return s.isEmpty() ? "" : s + " ";
    }

    private static String deprecation(AnnotatedElement e) {
        Deprecated d = e.getAnnotation(Deprecated.class);
        if (d == null) {
            return "";
        }
        return d.forRemoval() ? "@Deprecated(forRemoval) " : "@Deprecated ";
    }

    private static String typeParameters(TypeVariable<?>[] variables) {
        if (variables.length == 0) {
            return "";
        }
        return Arrays.stream(variables)
                        .map(v -> {
                            Type[] bounds = v.getBounds();
                            boolean plain = bounds.length == 1 && bounds[0] == Object.class;
                            return plain
                                    ? v.getName()
                                    : v.getName() + " extends "
                                            + Arrays.stream(bounds)
                                                    .map(Type::getTypeName)
                                                    .collect(Collectors.joining(" & "));
                        })
                        .collect(Collectors.joining(", ", "<", ">"))
                + " ";
    }

    private static String parameters(Executable e) {
        String params = Arrays.stream(e.getGenericParameterTypes())
                .map(Type::getTypeName)
                .collect(Collectors.joining(", ", "(", ")"));
        if (e.isVarArgs()) {
            params = params.substring(0, params.length() - 3) + "...)";
        }
        Type[] thrown = e.getGenericExceptionTypes();
        if (thrown.length > 0) {
            params += " throws "
                    + Arrays.stream(thrown).map(Type::getTypeName).sorted().collect(Collectors.joining(", "));
        }
        return params;
    }
}
