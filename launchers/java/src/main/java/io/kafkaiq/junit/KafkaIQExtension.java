package io.kafkaiq.junit;

import java.lang.reflect.AnnotatedElement;
import java.util.Optional;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * What {@link KafkaIQ} registers: starts the cluster of an annotated class before its tests and of an annotated
 * method before it, keeps it in the extension context's store (which JUnit closes when the class or method is
 * done, whether its tests passed or not) and hands it to {@link KafkaIQCluster} parameters.
 */
public final class KafkaIQExtension implements BeforeAllCallback, BeforeEachCallback, ParameterResolver {
    private static final Namespace NAMESPACE = Namespace.create(KafkaIQExtension.class);

    /** The store's value: JUnit calls close() when its context ends. */
    private record Running(KafkaIQCluster cluster) implements ExtensionContext.Store.CloseableResource {
        @Override
        public void close() {
            cluster.close();
        }
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        clusterOf(context);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        clusterOf(context);
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == KafkaIQCluster.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return clusterOf(context).orElseThrow(() -> new ParameterResolutionException(
                "no @KafkaIQ cluster for " + parameter.getDeclaringExecutable()
                        + ": annotate its test class (or, for a test method's own parameters, the method)"));
    }

    /**
     * The cluster of the nearest annotated method or class, from this context outwards, started the first time
     * it is asked for: a constructor of a PER_CLASS test instance may ask before beforeAll.
     */
    private static Optional<KafkaIQCluster> clusterOf(ExtensionContext context) {
        for (ExtensionContext c = context; c != null; c = c.getParent().orElse(null)) {
            Optional<AnnotatedElement> element = c.getElement();
            if (element.isEmpty()) {
                continue;
            }
            Optional<KafkaIQ> annotation = AnnotationSupport.findAnnotation(element.get(), KafkaIQ.class);
            if (annotation.isPresent()) {
                // keyed by the element: a store read also sees the parents' entries
                Running running = c.getStore(NAMESPACE).getOrComputeIfAbsent(element.get(),
                        key -> new Running(start(annotation.get())), Running.class);
                return Optional.of(running.cluster());
            }
        }
        return Optional.empty();
    }

    private static KafkaIQCluster start(KafkaIQ annotation) {
        KafkaIQCluster.Options options = KafkaIQCluster.options()
                .brokers(annotation.brokers())
                .binary(annotation.binary());
        for (String o : annotation.overrides()) {
            options.override(o);
        }
        return KafkaIQCluster.start(options);
    }
}
