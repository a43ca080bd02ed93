// The store ports live at the top of src/ (stages and stores both read them); this is their home for store code.
export * from '../ports.js';
