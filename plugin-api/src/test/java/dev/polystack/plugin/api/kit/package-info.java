/**
 * The plug-in author kit: conformance checks a plug-in runs in its own tests, against its
 * descriptor and against recorded snapshot cases ({@link
 * dev.polystack.plugin.api.kit.Conformance}). It ships as plugin-api's test-jar, for test scope
 * only, built from the same version as the API it checks; docs/plugin-authoring.md describes it.
 */
package dev.polystack.plugin.api.kit;
