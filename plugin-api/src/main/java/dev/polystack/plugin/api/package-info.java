/**
 * The polystack plug-in API: the service-provider interface through which the host loads
 * language plug-ins ({@link dev.polystack.plugin.api.Plugin} via {@link java.util.ServiceLoader})
 * and the value types they exchange with it. A runtime plug-in
 * ({@link dev.polystack.plugin.api.RuntimePlugin}) recognises its runtime in a module, learns its
 * offsets and walks and names its frames; a probe plug-in
 * ({@link dev.polystack.plugin.api.ProbePlugin}) plans breakpoints and decodes their hits, and
 * may decode the registers of functions it knows at probe sites the host places itself
 * ({@link dev.polystack.plugin.api.ArgumentDecoder}).
 *
 * <p>Compatibility: the API is versioned {@code major.minor} ({@link
 * dev.polystack.plugin.api.ApiVersion#CURRENT}); every public type says with {@code @since} the
 * version that added it. A host loads a plug-in built against the same major version and a minor
 * version no newer than its own ({@link dev.polystack.plugin.api.ApiVersion#canLoad}). Minor
 * versions only add types, default methods and constructors that keep the old ones (a renamed
 * accessor keeps its old name, {@code @Deprecated}), so a plug-in built for 1.0 loads unchanged on
 * every 1.x host; a major version may change or remove them. The build checks this against the
 * last released API with japicmp. docs/plugin-authoring.md describes the contract, the check and
 * what each minor version added.
 *
 * @since 1.0
 */
package dev.polystack.plugin.api;
