package io.github.idemtx.ledger;

import java.util.Optional;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.postgresql.PostgreSQLContainer;

/** A PostgreSQL in a container, for machines with Docker and no PostgreSQL of their own. */
record TestcontainersDatabase(PostgreSQLContainer container) implements AutoCloseable {

    static Optional<TestcontainersDatabase> startIfDockerAnswers() {
        try {
            if (!DockerClientFactory.instance().isDockerAvailable()) {
                return Optional.empty();
            }
        } catch (RuntimeException | LinkageError e) {
            return Optional.empty();
        }
        PostgreSQLContainer container = new PostgreSQLContainer("postgres:15-alpine");
        container.start();
        return Optional.of(new TestcontainersDatabase(container));
    }

    String url() {
        return container.getJdbcUrl();
    }

    String user() {
        return container.getUsername();
    }

    String password() {
        return container.getPassword();
    }

    @Override
    public void close() {
        container.stop();
    }
}
