/** The outbox's RabbitMQ transport: publishes each message and counts it delivered on the broker's confirm. */
module io.github.idemtx.outbox.rabbitmq {
    requires transitive io.github.idemtx.jooq;
    requires static transitive org.jspecify;
    // in the API: the transport takes the application's RabbitMQ Connection
    requires transitive com.rabbitmq.client;

    exports io.github.idemtx.outbox.rabbitmq;
}
