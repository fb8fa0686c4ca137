-- Similarity search over 300 short notes in the sqlite3 shell, with embed_index.
-- Run from the repository root after `make`:
--     sqlite3 :memory: '.read examples/notes.sql'
-- The model is the small sentence encoder that comes with the repository; any BERT-family
-- sentence-transformers folder works the same way (for example all-MiniLM-L6-v2 from Hugging Face).
.load ./embed
.mode list
.headers off
SELECT 'model: ' || embed_load('mini', 'models/sqlite-embed-mini');

-- 300 notes, made from templates so that the example needs no data file.
CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL);
WITH subjects(i, s) AS (VALUES (0, 'The morning bus'), (1, 'The night train'), (2, 'Our team meeting'),
                               (3, 'The office printer'), (4, 'My bicycle'), (5, 'The coffee machine'),
                               (6, 'The weekly report'), (7, 'The garden hose'), (8, 'The school trip'),
                               (9, 'The dentist appointment')),
     events(j, e) AS (VALUES (0, 'was late again'), (1, 'was cancelled'), (2, 'broke down'),
                             (3, 'went perfectly'), (4, 'was moved to Friday'), (5, 'needs to be fixed')),
     places(p, w) AS (VALUES (0, 'near the station.'), (1, 'in the city centre.'), (2, 'at home.'),
                             (3, 'on the third floor.'), (4, 'by the river.'))
INSERT INTO notes(body)
SELECT s || ' ' || e || ' ' || w FROM subjects, events, places ORDER BY i, j, p;

-- The index embeds each note with the model; one INSERT ... SELECT is embedded in batches.
CREATE VIRTUAL TABLE notes_idx USING embed_index(model = 'mini', metric = 'cosine');
INSERT INTO notes_idx(rowid, text) SELECT id, body FROM notes;
SELECT 'indexed: ' || count(*) FROM notes_idx;

-- Questions, answered by the three nearest notes each (the query text is embedded too).
CREATE TABLE questions(qid INTEGER PRIMARY KEY, question TEXT NOT NULL);
INSERT INTO questions(question) VALUES
    ('Was the train late?'),
    ('Is the printer broken?'),
    ('When is the meeting?'),
    ('The coffee machine needs to be fixed on the third floor.'),
    ('Did anything happen by the river?');
SELECT q.question, n.id, n.body, printf('%.4f', i.distance)
  FROM questions AS q
  JOIN notes_idx AS i ON i.notes_idx MATCH q.question AND i.k = 3
  JOIN notes AS n ON n.id = i.rowid
 ORDER BY q.qid, i.distance, n.id;
