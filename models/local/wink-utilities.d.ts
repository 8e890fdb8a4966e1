// wink-nlp declares its utilities under extensionless names, which Node's ESM loader cannot resolve
// in the built JS (the package has no "exports" map); the `.js` names used in the sources are these.
declare module 'wink-nlp/utilities/similarity.js' {
  export { default } from 'wink-nlp/utilities/similarity';
}
declare module 'wink-nlp/utilities/bm25-vectorizer.js' {
  export { default } from 'wink-nlp/utilities/bm25-vectorizer';
}
