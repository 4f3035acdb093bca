package main

import (
	"bytes"
	"fmt"
	"net/smtp"
	"text/template"

	"github.com/asynkron/protoactor-go/actor"
)

// Email is a message ready to send.
type Email struct {
	To   string
	Body []byte
}

// sendResult answers an Email sent to an EmailSender.
type sendResult struct{ err error }

// createResult answers a Recipient sent to the EmailCreator.
type createResult struct {
	email *Email
	err   error
}

const fromAddress = "campaign@foreman.example"

// DefaultTemplate is the campaign's email; it is filled per recipient.
const DefaultTemplate = `From: Foreman <{{.From}}>
To: {{.R.Name}} <{{.R.Email}}>
Subject: News for {{.R.City}}, {{.R.Name}}

Dear {{.R.Name}},

this month's newsletter for our readers in {{.R.City}} is out.
You receive it as reader #{{.R.ID}}.

The Foreman team
`

// emailCreator is the seed's Email Creator: it fills the template with a
// recipient's context and answers the complete email.
type emailCreator struct {
	tmpl *template.Template
	buf  bytes.Buffer
}

func newEmailCreatorProps(text string) (*actor.Props, error) {
	tmpl, err := template.New("email").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("emailcampaign: parse template: %w", err)
	}
	return actor.PropsFromProducer(func() actor.Actor { return &emailCreator{tmpl: tmpl} }), nil
}

// createBatch asks the EmailCreator for the emails of a page of
// recipients in one request (the cluster campaign's Epic does).
type createBatch struct{ recipients []Recipient }

// createBatchResult answers a createBatch: emails[i] is recipients[i]'s.
type createBatchResult struct {
	emails []*Email
	err    error
}

func (e *emailCreator) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *Recipient:
		email, err := e.create(m)
		c.Respond(&createResult{email: email, err: err})
	case *createBatch:
		res := &createBatchResult{emails: make([]*Email, 0, len(m.recipients))}
		for i := range m.recipients {
			email, err := e.create(&m.recipients[i])
			if err != nil {
				res.emails, res.err = nil, err
				break
			}
			res.emails = append(res.emails, email)
		}
		c.Respond(res)
	}
}

func (e *emailCreator) create(r *Recipient) (*Email, error) {
	e.buf.Reset()
	if err := e.tmpl.Execute(&e.buf, struct {
		From string
		R    *Recipient
	}{fromAddress, r}); err != nil {
		return nil, fmt.Errorf("emailcampaign: template for %s: %w", r.Email, err)
	}
	body := bytes.ReplaceAll(e.buf.Bytes(), []byte("\n"), []byte("\r\n"))
	return &Email{To: r.Email, Body: body}, nil
}

// emailSender is the seed's Email Sender: it keeps one SMTP connection open
// (reconnecting after an error) and sends each email it is asked to.
type emailSender struct {
	addr   string
	client *smtp.Client
}

func newEmailSenderProps(addr string) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &emailSender{addr: addr} })
}

func (s *emailSender) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *Email:
		err := s.send(msg)
		if err != nil {
			s.close() // reconnect for the next email
		}
		c.Respond(&sendResult{err: err})
	case *actor.Stopping:
		if s.client != nil {
			_ = s.client.Quit()
			s.close()
		}
	}
}

func (s *emailSender) send(e *Email) error {
	if s.client == nil {
		cl, err := smtp.Dial(s.addr)
		if err != nil {
			return fmt.Errorf("emailcampaign: connect to smtp %s: %w", s.addr, err)
		}
		if err := cl.Hello("campaign.foreman.example"); err != nil {
			_ = cl.Close()
			return fmt.Errorf("emailcampaign: smtp hello: %w", err)
		}
		s.client = cl
	}
	if err := s.client.Mail(fromAddress); err != nil {
		return fmt.Errorf("emailcampaign: smtp MAIL: %w", err)
	}
	if err := s.client.Rcpt(e.To); err != nil {
		return fmt.Errorf("emailcampaign: smtp RCPT %s: %w", e.To, err)
	}
	w, err := s.client.Data()
	if err != nil {
		return fmt.Errorf("emailcampaign: smtp DATA: %w", err)
	}
	if _, err := w.Write(e.Body); err != nil {
		return fmt.Errorf("emailcampaign: smtp body: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("emailcampaign: smtp end of data: %w", err)
	}
	return nil
}

func (s *emailSender) close() {
	if s.client != nil {
		_ = s.client.Close()
		s.client = nil
	}
}
